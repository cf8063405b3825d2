"""Fitting 10^7 sequences that never exist on the client, on a local Dask cluster.

Run: ``python benchmarks/bench_dask.py [--n-samples 10000000] [--scheduler ADDRESS]``
(needs ``python -m pip install 'sklearn-linattn[dask]'``)

Sequences (d=8, 16 tokens, entries N(0, 1/16)) are generated lazily on the workers in
blocks of 200000, labelled there by a fixed random 2-head MHLA, lifted there, and only
the p x p statistics (p = 288) travel to the client, which solves. Reports the wall
time, the client's peak resident memory, each worker's peak resident memory, the size
the data would have in memory, and the distance of the fit to the generating model.
Without ``--scheduler`` a LocalCluster of 2 worker processes is started.
"""

import argparse
import resource
import time

import numpy as np

from sklearn_linattn import LinearAttentionRegressor
from sklearn_linattn.datasets import make_random_mhla


def peak_rss_megabytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    _, _, truth = make_random_mhla(1, n_tokens, d, n_heads=2, random_state=0)
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
    distance = model.attention_.distance(truth) / np.linalg.norm(truth.lifted_coef())

    print(
        f"{args.n_samples} sequences of {n_tokens} tokens, d={d}, "
        f"chunks of {args.chunk}"
    )
    print("| measure | value |")
    print("| --- | --- |")
    print(f"| data size if materialized | {X.nbytes / 2**30:.1f} GiB |")
    print(
        "| fit wall time (generate + label + lift + reduce + solve) | "
        f"{seconds:.1f} s |"
    )
    print(f"| throughput | {args.n_samples / seconds:,.0f} sequences/s |")
    print(f"| client peak resident memory | {peak_rss_megabytes():.0f} MiB |")
    for address, megabytes in sorted(workers.items()):
        print(f"| worker {address} peak resident memory | {megabytes:.0f} MiB |")
    print(f"| heads recovered | {model.n_heads_} (generating: 2) |")
    print(f"| relative distance to the generating model | {distance:.1e} |")
    print(
        f"| certificate | identifiable={model.certificate_.identifiable}, "
        f"lambda_min={model.certificate_.min_eigenvalue:.2e} |"
    )
    client.close()


if __name__ == "__main__":
    main()
