"""How the suite is shared between pytest-xdist workers (`make test TEST_WORKERS=2`): a module's tests run on one
worker, one after another (its module fixtures, such as a two-node cluster, are made once), and so
do all the tests of a Ray that a `corpusmem serve` holds.

Those are one group because an import with no RAY_ADDRESS joins the newest served Ray of this user
(`jobs.runtime.served_ray`): on two workers, the server that one test starts would be found by
another test's import, which expects the session's. In one group they follow each other.

pytest-xdist's own `--dist loadgroup` reads `xdist_group` marks into node ids, which pytest 9 no
longer lets a plugin change, so the grouping is a scheduler of its own here.
"""

from __future__ import annotations

# Modules with tests that start a `corpusmem serve` of their own Ray or take the session's one
# (`serving` in tests/serve/conftest.py; the suite refuses to start when a module that takes it is
# not named here).
SERVED_RAY_MODULES = frozenset({
    "tests/jobs/test_shutdown.py",
    "tests/serve/test_api.py",
    "tests/serve/test_dashboard.py",
    "tests/serve/test_query_api.py",
})


def module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def of(nodeid: str) -> str:
    """The group a test runs in, on whichever worker takes it."""
    name = module(nodeid)
    return "served-ray" if name in SERVED_RAY_MODULES else name


def scheduler(config, log):
    """pytest-xdist's scheduling by scope, with `of` as the scope, in the order of collection: the
    heavy modules of tests/jobs go out first and the small ones fill the workers at the end."""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return of(nodeid)

    config.option.loadscopereorder = False
    return ByGroup(config, log)
