import os
import random

import pytest


@pytest.fixture
def seed(request):
    """A seed for random idle/backpressure patterns, printed so a failure replays.

    Set ``LINKCODEC_SEED`` to replay one.
    """
    value = int(os.environ.get("LINKCODEC_SEED", random.SystemRandom().randrange(1 << 31)))
    print(f"\n{request.node.nodeid}: seed {value} (replay with LINKCODEC_SEED={value})")
    return value
