"""A package face that loads each module when one of its names is first used (PEP 562), so a
command that needs the options does not load the sweep, nor a scan the search."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: a name of `homes` (name -> its module under the
    package) is imported at its first use and kept in `namespace` (the package's globals), so
    the next use finds it at once."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return __getattr__
