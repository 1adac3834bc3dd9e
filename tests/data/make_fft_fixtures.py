#!/usr/bin/env python
"""Regenerate the FFT and complex-number fixtures (TensorFlow needed).

    python tests/data/make_fft_fixtures.py

Writes, under ``tests/data/tf/`` with the contract and helpers of ``make_fixtures.py``:

* ``fft_ops``: RFFT (fft_length equal to, below and above the input length), IRFFT (even
  and odd lengths), RFFT2D/IRFFT2D, FFT/IFFT/FFT2D on a complex64 feed, ComplexAbs, Complex,
  Real, Imag, Conj, Cast to and from complex64 and complex Add/Sub/Mul/Neg/Div/RealDiv/Square,
  with complex64 fetches;
* ``stft_mel``: the audio front end users bring: ``tf.signal.stft`` of 1 s of 16 kHz audio
  (frame 400, hop 160, fft_length 512, Hann window) -> magnitude -> 40-bin mel matrix ->
  ``log(x + 1e-6)``;
* ``mfcc``: log-mel -> ``tf.signal.mfccs_from_log_mel_spectrograms`` (a DCT-II by RFFT) and
  ``tf.signal.inverse_stft`` (IRFFT, overlap-add);
* ``spectrogram``: a small spectrogram classifier: stft -> log power -> 3x3 convolution ->
  ReLU -> mean -> dense.

Seeded; reruns give byte-identical files with the same TF.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_fixtures import (  # noqa: E402
    F32,
    OUT_DIR,
    Fixture,
    build,
    normal,
    op_types,
    rng,
    spec,
    verify_written,
    write_fixture,
)

R = tf.raw_ops
C64 = tf.complex64
MAX_PB_BYTES = 100 * 1024


def fft_ops_fixture() -> Fixture:
    r = rng(131)
    x = normal(r, [3, 16])
    z = (normal(r, [2, 8]) + 1j * normal(r, [2, 8])).astype(np.complex64)
    s = (normal(r, [2, 9]) + 1j * normal(r, [2, 9])).astype(np.complex64)
    img = normal(r, [2, 6, 8])

    @tf.function(
        input_signature=[
            spec([3, 16], F32, name="x"),
            spec([2, 8], C64, name="z"),
            spec([2, 9], C64, name="s"),
            spec([2, 6, 8], F32, name="img"),
        ]
    )
    def f(x, z, s, img):
        spectrum = R.RFFT(input=x, fft_length=[16])
        w = R.Complex(real=x[:2, :8], imag=x[1:, 8:])
        return [
            spectrum,
            R.RFFT(input=x, fft_length=[12]),  # crops the input
            tf.signal.rfft(x, fft_length=[20]),  # pads it with zeros first
            R.ComplexAbs(x=spectrum),
            R.IRFFT(input=spectrum, fft_length=[16]),
            R.IRFFT(input=s, fft_length=[17]),  # odd length: no Nyquist bin
            R.IRFFT(input=s, fft_length=[10]),  # crops the spectrum
            R.FFT(input=z),
            R.IFFT(input=z),
            R.FFT2D(input=R.Reshape(tensor=z, shape=[4, 4])),
            R.RFFT2D(input=img, fft_length=[6, 8]),
            R.IRFFT2D(input=R.RFFT2D(input=img, fft_length=[6, 8]), fft_length=[6, 8]),
            R.Real(input=z),
            R.Imag(input=z),
            R.Conj(input=z),
            R.Abs(x=R.Real(input=z)),
            R.Mul(x=z, y=w),
            R.AddV2(x=z, y=w),
            R.Sub(x=z, y=w),
            R.Neg(x=z),
            R.ComplexAbs(x=R.Mul(x=z, y=tf.constant(0.5 - 2j, C64))),
            R.RealDiv(x=z, y=w),
            R.Div(x=w, y=tf.constant(-1.5 + 0.25j, C64)),
            R.Square(x=z),
            R.Cast(x=z, DstT=F32),  # keeps the real part
            R.Cast(x=x, DstT=C64),
        ]

    must_have = {
        "RFFT", "IRFFT", "RFFT2D", "IRFFT2D", "FFT", "IFFT", "FFT2D", "ComplexAbs", "Complex",
        "Real", "Imag", "Conj", "Mul", "AddV2", "Sub", "Neg", "RealDiv", "Div", "Square", "Cast",
    }  # fmt: skip
    return Fixture("fft_ops", f, [x, z, s, img], must_have, tolerance=1e-5)


def _audio(r: np.random.Generator, samples: int) -> np.ndarray:
    """A chirp plus two tones and noise: energy spread over the mel bands."""
    t = np.arange(samples) / 16000.0
    wave = 0.5 * np.sin(2 * np.pi * (200 + 3000 * t) * t) + 0.2 * np.sin(2 * np.pi * 440 * t)
    wave += 0.1 * np.sin(2 * np.pi * 5000 * t) + 0.02 * r.standard_normal(samples)
    return wave.astype(np.float32)[None, :]


def stft_mel_fixture() -> Fixture:
    audio = _audio(rng(132), 16000)
    mel = tf.signal.linear_to_mel_weight_matrix(40, 257, 16000, 20.0, 7600.0)

    @tf.function(input_signature=[spec([1, 16000], F32, name="audio")])
    def f(audio):
        stft = tf.signal.stft(audio, frame_length=400, frame_step=160, fft_length=512)
        magnitude = tf.abs(stft)
        return tf.math.log(tf.tensordot(magnitude, mel, 1) + 1e-6)

    must_have = {"RFFT", "ComplexAbs", "Log"}
    return Fixture("stft_mel", f, [audio], must_have, tolerance=1e-4)


def mfcc_fixture() -> Fixture:
    """Speech-command features: log-mel -> MFCCs (a DCT-II: an RFFT, a complex multiply, the
    real part) and the inverse stft of the spectrum (IRFFT, overlap-add)."""
    audio = _audio(rng(134), 4000)
    mel = tf.signal.linear_to_mel_weight_matrix(20, 129, 16000, 20.0, 7600.0)

    @tf.function(input_signature=[spec([1, 4000], F32, name="audio")])
    def f(audio):
        stft = tf.signal.stft(audio, frame_length=256, frame_step=128)
        log_mel = tf.math.log(tf.tensordot(tf.abs(stft), mel, 1) + 1e-6)
        mfccs = tf.signal.mfccs_from_log_mel_spectrograms(log_mel)[..., :13]
        return mfccs, tf.signal.inverse_stft(stft, frame_length=256, frame_step=128)

    must_have = {"RFFT", "IRFFT", "ComplexAbs", "Mul", "Real"}
    return Fixture("mfcc", f, [audio], must_have, tolerance=1e-4)


def spectrogram_fixture() -> Fixture:
    r = rng(133)
    audio = _audio(r, 4000)
    kernel = tf.constant(normal(r, [3, 3, 1, 8], 0.3))
    dense = tf.constant(normal(r, [8, 5], 0.5))

    @tf.function(input_signature=[spec([2, 4000], F32, name="audio")])
    def f(audio):
        stft = tf.signal.stft(audio, frame_length=256, frame_step=128)  # fft_length 256
        power = tf.math.log(tf.math.square(tf.abs(stft)) + 1e-6)[..., None]
        h = tf.nn.relu(tf.nn.conv2d(power, kernel, 1, "SAME"))
        return tf.nn.softmax(tf.reduce_mean(h, axis=[1, 2]) @ dense)

    must_have = {"RFFT", "ComplexAbs", "Conv2D"}
    two = np.concatenate([audio, audio[:, ::-1] * 0.5])
    return Fixture("spectrogram", f, [two], must_have, tolerance=1e-4)


def main() -> int:
    np.random.seed(0)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for fx in [fft_ops_fixture(), stft_mel_fixture(), mfcc_fixture(), spectrogram_fixture()]:
        build(fx)
        write_fixture(fx)
        verify_written(fx)
        size = (OUT_DIR / f"{fx.name}.pb").stat().st_size
        assert size < MAX_PB_BYTES, (fx.name, size)
        ops = " ".join(op_types(fx.graph_def))
        print(f"{fx.name}: {size} bytes, {len(fx.results)} results; {ops}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
