"""What the tests share: tiny models and runs, Hugging Face models built from their configs, the AppTest session
harness, and the paths below. Every test imports them one way: `from tests.helpers.tiny_models import ...`."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout
# the development corpus beside the checkout (tests using it skip without it)
SHARED_DATA = ROOT.parent / "shared" / "data"
TEST_DATA = ROOT / "tests" / "data"
ARTIFACTS = ROOT / "tests" / "artifacts"
