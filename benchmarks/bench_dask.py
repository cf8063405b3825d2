"""Fitting 10^7 sequences that never exist on the client, on a local Dask cluster.

Run: ``python benchmarks/bench_dask.py [--n-samples 10000000] [--chunk 200000]
[--scheduler ADDRESS] [--json FILE]``
(needs ``python -m pip install 'sklearn-linattn[dask]'``)

Sequences (d=8, 16 tokens, entries N(0, 1/16)) are generated lazily on the workers in
blocks of 200000, labelled there by a fixed random 2-head MHLA, lifted there, and only
the p x p statistics (p = 288) travel to the client, which solves. Reports the wall
time, the client's peak resident memory, each worker's peak resident memory, the size
the data would have in memory, and the distance of the fit to the generating model.
Without ``--scheduler`` a LocalCluster of 2 worker processes is started.
"""

import resource
import time

import numpy as np
from _common import (
    make_parser,
    markdown_table,
    random_attention,
    relative_distance,
    write_json,
)

from sklearn_linattn import LinearAttentionRegressor


def peak_rss_megabytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = make_parser(__doc__)
    parser.add_argument("--n-samples", type=int, default=10**7)
    parser.add_argument("--chunk", type=int, default=200_000)
    parser.add_argument("--scheduler", help="address of a running Dask scheduler")
    args = parser.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    d, n_tokens = 8, 16
    truth = random_attention(d, n_heads=2, random_state=0)
    X = da.random.RandomState(0).normal(
        0,
        1 / np.sqrt(n_tokens),
        size=(args.n_samples, n_tokens, d),
        chunks=(args.chunk, n_tokens, d),
    )
    y = X.map_blocks(
        lambda block: truth.predict(block)[:, 0], drop_axis=[1, 2], dtype=np.float64
    )
    client.run(lambda: None)  # workers up before timing
    start = time.perf_counter()
    model = LinearAttentionRegressor().fit(X, y)
    seconds = time.perf_counter() - start
    workers = client.run(peak_rss_megabytes)
    results = {
        "n_samples": args.n_samples,
        "n_tokens": n_tokens,
        "token_dim": d,
        "chunk": args.chunk,
        "data_gibibytes": X.nbytes / 2**30,
        "fit_seconds": seconds,
        "sequences_per_second": args.n_samples / seconds,
        "client_peak_megabytes": peak_rss_megabytes(),
        "worker_peak_megabytes": workers,
        "n_heads": model.n_heads_,
        "relative_distance": relative_distance(model.attention_, truth),
        "identifiable": model.certificate_.identifiable,
        "min_eigenvalue": model.certificate_.min_eigenvalue,
    }

    print(
        f"{args.n_samples} sequences of {n_tokens} tokens, d={d}, "
        f"chunks of {args.chunk}"
    )
    rows = [
        ("data size if materialized", f"{results['data_gibibytes']:.1f} GiB"),
        (
            "fit wall time (generate + label + lift + reduce + solve)",
            f"{seconds:.1f} s",
        ),
        ("throughput", f"{results['sequences_per_second']:,.0f} sequences/s"),
        (
            "client peak resident memory",
            f"{results['client_peak_megabytes']:.0f} MiB",
        ),
        *(
            (f"worker {address} peak resident memory", f"{megabytes:.0f} MiB")
            for address, megabytes in sorted(workers.items())
        ),
        ("heads recovered", f"{model.n_heads_} (generating: 2)"),
        (
            "relative distance to the generating model",
            f"{results['relative_distance']:.1e}",
        ),
        (
            "certificate",
            f"identifiable={results['identifiable']}, "
            f"lambda_min={results['min_eigenvalue']:.2e}",
        ),
    ]
    print(
        markdown_table(
            [("measure", "{measure}"), ("value", "{value}")],
            [{"measure": measure, "value": value} for measure, value in rows],
        )
    )
    write_json(args.json, results)
    client.close()


if __name__ == "__main__":
    main()
