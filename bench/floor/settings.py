"""ReviewHub's settings, with the floor's URLconf: its two views first, then everything else ReviewHub serves."""

from reviewhub.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor.urls"
