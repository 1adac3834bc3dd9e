"""A table from keys (opcodes, TF op names) to implementations, filled by a decorator."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Registry(Generic[K, V]):
    """``@registry.register(key, ...)`` adds an implementation; a key registered twice raises."""

    def __init__(self, what: str):
        self.what = what
        self._table: dict[K, V] = {}

    def register(self, *keys: K) -> Callable[[V], V]:
        def add(impl: V) -> V:
            for key in keys:
                if key in self._table:
                    raise ValueError(f"{self.what} for {key} is registered twice")
                self._table[key] = impl
            return impl

        return add

    def get(self, key: K) -> V | None:
        return self._table.get(key)

    def __getitem__(self, key: K) -> V:
        return self._table[key]

    def __contains__(self, key: object) -> bool:
        return key in self._table

    def __iter__(self) -> Iterator[K]:
        return iter(self._table)
