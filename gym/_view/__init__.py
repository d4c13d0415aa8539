"""Looking at runs: a local read-only web viewer, a static site, and terminal views.

For people who read trajectories. ``gym view`` is the command; from Python::

    from gym._view import Site, serve, write_site
    from gym._store import Store

    site = Site(Store(read_only=True))
    viewer = serve(site)            # viewer.url: http://127.0.0.1:PORT/
    write_site(site, Path("out"))   # the same pages as files
"""

from gym._view._episodes import EpisodeItem, episode_items, select
from gym._view._links import episode_page, run_page
from gym._view._server import Viewer, serve
from gym._view._site import Site, safe_url, write_site
from gym._view._terminal import episode_text, resolve_episode
from gym._view._text import clean

__all__ = [
    "EpisodeItem",
    "Site",
    "Viewer",
    "clean",
    "episode_items",
    "episode_page",
    "episode_text",
    "resolve_episode",
    "run_page",
    "safe_url",
    "select",
    "serve",
    "write_site",
]
