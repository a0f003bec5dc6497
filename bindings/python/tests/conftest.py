"""Shared paths for the package's tests."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def root() -> pathlib.Path:
    """The checkout's root (policies/, docs/, tests/fixtures/)."""
    return ROOT
