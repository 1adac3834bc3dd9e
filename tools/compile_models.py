"""Build the Keras models ``make bench-compile`` compiles (run by a Python with TensorFlow).

    TF_PYTHON tools/compile_models.py OUT_DIR NAME...

``bench/models.py``'s models by name, plus two that only the compile benchmark needs: Keras
EfficientNetB0 (unless ``bench/models.py`` has it) and VGG16 with its classifier (553 MB of
float32 weights: the compile-memory case), both 224x224, batch 1, weights=None (random,
seeded). Each is written as ``OUT_DIR/NAME.pb``, ``.yaml`` and ``.npz`` unless already there.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import models  # noqa: E402


def _keras_application(name: str) -> models.Spec:
    def make() -> object:
        import keras

        return getattr(keras.applications, name)(weights=None)

    return models.Spec(f"Keras {name} 224x224 (weights=None), batch 1", "model",
                       [1, 224, 224, 3], models._keras_fn(make))  # fmt: skip


EXTRA = {"bench_efficientnet_b0": "EfficientNetB0", "bench_vgg16": "VGG16"}


def main(out_dir: str, names: list[str]) -> None:
    for name, application in EXTRA.items():
        models.SPECS.setdefault(name, _keras_application(application))
    for name in names:
        models.build_generated(name, Path(out_dir))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
