"""One layer of linear attention on real time-series classification data (issue 27).

Run: ``python benchmarks/bench_real_sequences.py [--json FILE]`` (needs aeon, whose
wheel bundles the data sets: ``pip install . aeon``; without aeon it says so and
exits 0). Nothing is downloaded.

The data sets aeon ships, with their official train/test splits: multivariate
(BasicMotions, 6 channels; JapaneseVowels, 12 channels of different lengths) and
univariate (GunPoint, ArrowHead, ItalyPowerDemand; PickupGestureWiimoteZ of
different lengths). Every model gets the same input: the series left-padded with
zeros to one length where they differ. Test accuracy and fit + predict time of:

- attention: ``SeriesToTokens`` (a token per time step of a multivariate series,
  8 values per token of a univariate one), ``TokenwiseTransformer(StandardScaler())``,
  ``PositionalEncoding(constant=True)`` (the default, at most 8 positions), then
  ``LinearAttentionClassifierCV`` (leave-one-out over a wide alpha grid,
  ``n_heads=None``); and the same with the constant but no positions (the tokens
  as a set: only their second moments and sums, and the query);
- lifted features + RidgeClassifierCV: the same tokens through
  ``LiftedAttentionFeatures`` into scikit-learn's ridge classifier;
- RidgeClassifierCV and 1-nearest-neighbour (Euclidean) on the flattened series;
- MiniRocket (aeon's ``MiniRocketClassifier``, random_state=0), a strong standard
  for time-series classification (its time on the first data set includes the
  compilation of its Numba kernels).
"""

import time

import numpy as np
from _common import make_parser, markdown_table, write_json
from sklearn.linear_model import RidgeClassifierCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_linattn import LiftedAttentionFeatures, LinearAttentionClassifierCV
from sklearn_linattn.preprocessing import (
    PositionalEncoding,
    SeriesToTokens,
    TokenwiseTransformer,
)

DATA_SETS = [
    ("BasicMotions", "load_basic_motions"),
    ("JapaneseVowels", "load_japanese_vowels"),
    ("GunPoint", "load_gunpoint"),
    ("ArrowHead", "load_arrow_head"),
    ("ItalyPowerDemand", "load_italy_power_demand"),
    ("PickupGestureWiimoteZ", "load_pickup_gesture_wiimoteZ"),
]
ALPHAS = np.logspace(-2, 8, 21)
UNIVARIATE_WINDOW = 8


def padded(series):
    """Series of possibly different lengths as one array (n_cases, n_channels,
    n_timepoints), left-padded with zeros (the baselines' input)."""
    tokens = SeriesToTokens().fit_transform(series)
    return tokens.transpose(0, 2, 1)


def tokens(window, n_positions=None):
    return [
        SeriesToTokens(window=window),
        TokenwiseTransformer(StandardScaler()),
        PositionalEncoding(n_positions=n_positions, constant=True),
    ]


def models(n_channels):
    window = UNIVARIATE_WINDOW if n_channels == 1 else 1
    flat = make_pipeline(
        StandardScaler(), RidgeClassifierCV(alphas=np.logspace(-3, 3, 10))
    )
    return {
        "attention": make_pipeline(
            *tokens(window), LinearAttentionClassifierCV(alphas=ALPHAS, n_heads=None)
        ),
        "attention, no positions": make_pipeline(
            *tokens(window, n_positions=0),
            LinearAttentionClassifierCV(alphas=ALPHAS, n_heads=None),
        ),
        "lifted + RidgeClassifierCV": make_pipeline(
            *tokens(window),
            LiftedAttentionFeatures(),
            StandardScaler(),
            RidgeClassifierCV(alphas=np.logspace(-3, 3, 10)),
        ),
        "RidgeClassifierCV": ("flat", flat),
        "1-NN": ("flat", KNeighborsClassifier(n_neighbors=1)),
        "MiniRocket": ("3d", None),
    }


def run(name, loader):
    import aeon.datasets
    from aeon.classification.convolution_based import MiniRocketClassifier

    load = getattr(aeon.datasets, loader)
    X_train, y_train = load(split="train")
    X_test, y_test = load(split="test")
    train, test = padded(X_train), padded(X_test)
    n_channels = train.shape[1]
    length = max(train.shape[2], test.shape[2])
    train = np.pad(train, ((0, 0), (0, 0), (length - train.shape[2], 0)))
    test = np.pad(test, ((0, 0), (0, 0), (length - test.shape[2], 0)))
    row = {
        "data": name,
        "shape": f"{len(train)}/{len(test)} x {n_channels} x {length}",
        "ragged": isinstance(X_train, list),
    }
    for label, model in models(n_channels).items():
        start = time.perf_counter()
        if isinstance(model, tuple):
            kind, estimator = model
            if kind == "3d":
                estimator = MiniRocketClassifier(random_state=0)
                fitted = estimator.fit(train, y_train)
                predictions = fitted.predict(test)
            else:
                fitted = estimator.fit(train.reshape(len(train), -1), y_train)
                predictions = fitted.predict(test.reshape(len(test), -1))
        else:
            fitted = model.fit(X_train, y_train)
            predictions = fitted.predict(X_test)
            if label == "attention":
                last = fitted[-1]
                row["d"] = last.token_dim_
                row["alpha"] = last.alpha_
                row["alpha_at_edge"] = last.alpha_ in (ALPHAS[0], ALPHAS[-1])
        row[label] = float(np.mean(predictions == y_test))
        row[f"{label} seconds"] = time.perf_counter() - start
    return row


def main():
    parser = make_parser(__doc__)
    args = parser.parse_args()
    try:
        import aeon
    except ImportError:
        print("aeon is not installed (pip install aeon): nothing to run.")
        return
    print(f"aeon {aeon.__version__}")
    rows = [run(name, loader) for name, loader in DATA_SETS]
    labels = list(models(2))

    def cell(label):
        return lambda row: f"{row[label]:.3f} ({row[label + ' seconds']:.1f} s)"

    columns = [("data", "{data}"), ("train/test x channels x length", "{shape}")]
    columns += [(label, cell(label)) for label in labels]
    columns += [("d", "{d}"), ("alpha", "{alpha:.3g}")]
    print(markdown_table(columns, rows))
    write_json(args.json, rows)


if __name__ == "__main__":
    main()
