"""Learn multi-head linear attention by convex least squares, with certificates.

Implements Yau et al., "Learning Linear Attention in Polynomial Time" (NeurIPS 2025,
arXiv:2410.10101) as scikit-learn estimators.
"""

from . import datasets, preprocessing
from ._attention import MultiHeadLinearAttention
from ._certificate import IdentifiabilityCertificate, certify
from ._estimators import (
    LiftedAttentionFeatures,
    LinearAttentionClassifier,
    LinearAttentionRegressor,
)
from ._heads import CountFit, HeadReadout
from ._model_selection import LinearAttentionClassifierCV, LinearAttentionRegressorCV
from ._plotting import AttentionHeadsDisplay, HeadSearchDisplay
from ._rollout import generate_pipeline

__version__ = "0.1.0.dev0"

__all__ = [
    "AttentionHeadsDisplay",
    "CountFit",
    "HeadReadout",
    "HeadSearchDisplay",
    "IdentifiabilityCertificate",
    "LiftedAttentionFeatures",
    "LinearAttentionClassifier",
    "LinearAttentionClassifierCV",
    "LinearAttentionRegressor",
    "LinearAttentionRegressorCV",
    "MultiHeadLinearAttention",
    "certify",
    "datasets",
    "generate_pipeline",
    "preprocessing",
    "__version__",
]
