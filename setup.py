"""Only what pyproject.toml cannot say: the wheel carries the site skeleton (the repository's
mkdocs.yml + docs/, which `driftmatrix publish` builds the site from) as
`driftmatrix/publisher/site_skeleton`, so an installed driftmatrix publishes from any directory. A source
checkout and an editable install read them from the repository root instead."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithSiteSkeleton(build_py):
    def run(self):
        if not getattr(self, "editable_mode", False):
            # build/lib outlives a build: one made before a package moved would put its old copy in the
            # wheel beside the new one (the six bare stage names, next to driftmatrix/).
            shutil.rmtree(self.build_lib, ignore_errors=True)
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "driftmatrix" / "publisher" / "site_skeleton"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(HERE / "docs", dest / "docs")
        shutil.copy(HERE / "mkdocs.yml", dest / "mkdocs.yml")


setup(cmdclass={"build_py": BuildWithSiteSkeleton})
