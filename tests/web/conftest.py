"""What the web tests share: a site of real test games a module, and `pbem web` serving it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.web import Site, WebProcess, build_site


@pytest.fixture(scope="module")
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Finished and running games of every kind, built anew for each module that asks."""
    return build_site(tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2]))


@pytest.fixture(scope="module")
def web(site: Site) -> Iterator[WebProcess]:
    """`pbem web -c pbem.toml` as a process on a loopback port, serving the module's site."""
    process = WebProcess(site.config, site.folder / "web.log")
    try:
        yield process
    finally:
        process.stop()
