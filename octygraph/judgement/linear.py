"""Small models shipped as `.npz` files: logistic layers and a one-hidden-layer network.

The training scripts (`training/`) fit them with scikit-learn and save only arrays, so the run time needs
NumPy alone, loads in a millisecond and never unpickles code.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np


class ModelFileError(RuntimeError):
    """A shipped model file is missing or does not match this version of octygraph."""


@dataclass(frozen=True)
class Logistic:
    """One logistic layer: binary (one row of weights) or multinomial (one row per class)."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    """Shape (classes, features); one row for a binary model."""
    intercept: np.ndarray
    classes: tuple[str, ...]

    def scores(self, features: np.ndarray) -> np.ndarray:
        x = (np.atleast_2d(features).astype(np.float32) - self.mean) / self.scale
        return x @ self.coef.T + self.intercept

    def proba(self, features: np.ndarray) -> np.ndarray:
        """Binary: P(positive class) per row. Multinomial: a (rows, classes) matrix."""
        z = self.scores(features)
        if z.shape[1] == 1:
            return 1.0 / (1.0 + np.exp(-np.clip(z[:, 0], -30, 30)))
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Mlp:
    """Binary networks with one ReLU hidden layer, averaged: standardise, two products, sigmoid.

    Several members (the same shape, fitted from different seeds) vote by their mean probability,
    which steadies the verdict on sentences unlike any one member's training draw.
    """

    mean: np.ndarray
    scale: np.ndarray
    hidden_weights: np.ndarray
    """Shape (members, features, hidden)."""
    hidden_bias: np.ndarray
    """Shape (members, hidden)."""
    output_weights: np.ndarray
    """Shape (members, hidden)."""
    output_bias: np.ndarray
    """Shape (members,)."""

    def proba(self, features: np.ndarray) -> np.ndarray:
        """P(positive class) per row."""
        x = (np.atleast_2d(features).astype(np.float32) - self.mean) / self.scale
        hidden = np.maximum(
            np.einsum("nf,mfh->mnh", x, self.hidden_weights) + self.hidden_bias[:, None, :], 0.0
        )
        z = np.einsum("mnh,mh->mn", hidden, self.output_weights) + self.output_bias[:, None]
        return (1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))).mean(axis=0)


def save_mlp(arrays: dict[str, np.ndarray], prefix: str, model: Mlp) -> None:
    """Add one network's arrays to a dict destined for `np.savez`."""
    for name in ("mean", "scale", "hidden_weights", "hidden_bias", "output_weights", "output_bias"):
        arrays[f"{prefix}_{name}"] = np.asarray(getattr(model, name), dtype=np.float32)


def load_mlp(arrays: dict[str, np.ndarray], prefix: str) -> Mlp:
    try:
        return Mlp(
            mean=arrays[f"{prefix}_mean"],
            scale=arrays[f"{prefix}_scale"],
            hidden_weights=arrays[f"{prefix}_hidden_weights"],
            hidden_bias=arrays[f"{prefix}_hidden_bias"],
            output_weights=arrays[f"{prefix}_output_weights"],
            output_bias=np.atleast_1d(arrays[f"{prefix}_output_bias"]),
        )
    except KeyError as exc:
        raise ModelFileError(f"The model file lacks {exc.args[0]}; reinstall octygraph.") from exc


def save_logistic(arrays: dict[str, np.ndarray], prefix: str, model: Logistic) -> None:
    """Add one model's arrays to a dict destined for `np.savez`."""
    arrays[f"{prefix}_mean"] = model.mean.astype(np.float32)
    arrays[f"{prefix}_scale"] = model.scale.astype(np.float32)
    arrays[f"{prefix}_coef"] = model.coef.astype(np.float32)
    arrays[f"{prefix}_intercept"] = model.intercept.astype(np.float32)
    arrays[f"{prefix}_classes"] = np.array(model.classes)


def load_logistic(arrays: dict[str, np.ndarray], prefix: str) -> Logistic:
    try:
        return Logistic(
            mean=arrays[f"{prefix}_mean"],
            scale=arrays[f"{prefix}_scale"],
            coef=np.atleast_2d(arrays[f"{prefix}_coef"]),
            intercept=np.atleast_1d(arrays[f"{prefix}_intercept"]),
            classes=tuple(str(c) for c in arrays[f"{prefix}_classes"]),
        )
    except KeyError as exc:
        raise ModelFileError(f"The model file lacks {exc.args[0]}; reinstall octygraph.") from exc


_LOCK = threading.Lock()


@cache
def _load(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError) as exc:
        raise ModelFileError(
            f"Cannot read the model file {path}: {exc}; reinstall octygraph."
        ) from exc


def model_arrays(name: str) -> dict[str, np.ndarray]:
    """The arrays of a shipped model file (`octygraph/data/<name>`), loaded once per process."""
    path = Path(str(resources.files("octygraph") / "data" / name))
    with _LOCK:
        return _load(str(path))
