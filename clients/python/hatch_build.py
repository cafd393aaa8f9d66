"""The build hook that puts the Functions library into the package: the repository's
functions/rl.lua is not committed under src/redis_rl/, so each build copies it in, to
`redis_rl/rl.lua` in the wheel and `src/redis_rl/rl.lua` in the sdist. A wheel built from
the sdist (which has no repository around it) takes the sdist's copy. An editable install
gets none: the package then reads the checkout's functions/rl.lua."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: Where the package carries the library, from the project's root.
SHIPPED = "src/redis_rl/rl.lua"


class LibraryHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        root = Path(self.root)
        source = root.parent.parent / "functions" / "rl.lua"
        if not source.is_file():  # an sdist: its own copy (which its .gitignore hides)
            source = root / SHIPPED
        if not source.is_file():
            raise FileNotFoundError(f"neither {root.parent.parent}/functions/rl.lua nor "
                                    f"{source} exists")
        inside = "redis_rl/rl.lua" if self.target_name == "wheel" else SHIPPED
        build_data["force_include"][str(source)] = inside
