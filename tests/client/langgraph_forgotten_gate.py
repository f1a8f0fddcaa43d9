"""Run as its own process like an example: examples/langgraph_refund.py as a user who forgot ReviewHubMiddleware
would run it (the middleware replaced by one that does nothing), with the example's command line. The tool then
runs outside the gate, and LangGraphReview.resume must say so rather than finish quietly."""

import runpy
import sys
from pathlib import Path

import reviewhub_client.for_langgraph
from langchain.agents.middleware import AgentMiddleware

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_refund.py"


class Forgotten(AgentMiddleware):
    """Where ReviewHubMiddleware should have been: nothing."""

    def __init__(self, gate):
        super().__init__()


if __name__ == "__main__":
    reviewhub_client.for_langgraph.ReviewHubMiddleware = Forgotten
    sys.path.insert(0, str(EXAMPLE.parent))
    sys.argv = [str(EXAMPLE), *sys.argv[1:]]
    runpy.run_path(str(EXAMPLE), run_name="__main__")
