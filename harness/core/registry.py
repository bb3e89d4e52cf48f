"""A name -> class registry with lazily loaded entry-point plugins, shared by strategies and
scenario families (each keeps its own instance and entry-point group)."""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from harness.core.suggest import did_you_mean

#: Set to any non-empty value to skip loading third-party plugins from entry points.
NO_PLUGINS_ENV = "CTXBENCH_NO_PLUGINS"

C = TypeVar("C", bound=type[Any])


class PluginError(ValueError):
    """A third-party plugin that cannot be loaded (its import raised: a bad registration such as a tool
    name that differs from a registered one only by ``-``/``_``, a name registered twice, a missing
    dependency). ``str()`` is one line naming the plugin's entry point and what went wrong."""


class Registry(Generic[C]):
    def __init__(self, kind: str, group: str) -> None:
        self.kind = kind
        self.group = group
        self._classes: dict[str, C] = {}
        self._plugins_loaded = False

    def register(self, name: str) -> Callable[[C], C]:
        """Class decorator: register under ``name`` and set ``cls.name`` (twice is an error)."""

        def decorate(cls: C) -> C:
            if name in self._classes:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            cls.name = name
            self._classes[name] = cls
            return cls

        return decorate

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        if os.environ.get(NO_PLUGINS_ENV):
            return
        for ep in entry_points(group=self.group):
            if ep.name not in self._classes:
                try:
                    ep.load()  # importing the module runs its @register
                except Exception as e:  # any failure of the user's plugin is reported as theirs
                    problem = " ".join(str(e).split()) or type(e).__name__
                    raise PluginError(f"{self.kind} plugin {ep.name!r} ({ep.value}) cannot be loaded: {problem}") \
                        from None

    def get(self, name: str) -> C:
        """The class registered under ``name``; KeyError listing the known names otherwise."""
        self._load_plugins()
        try:
            return self._classes[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}{did_you_mean(name, self.names())}; "
                           f"known: {', '.join(self.names())}") from None

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._classes)
