"""Render `dvc plots show` offline and screenshot the page with headless Chromium.

    npm install vega@5 vega-lite@5 vega-embed@6      # once, at the repository root (node_modules/)
    apt-get install -y chromium                      # Debian's package
    python scripts/plots_screenshot.py --out plots.png [--repo PATH]

The page uses scripts/offline_plots.html, which loads Vega from node_modules/ instead of the CDN that
DVC's own page uses, so this works without network. Look at the PNG: each study's runs in distinct
colours, pass@k on a log k axis.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--no-first-run", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                  "--allow-file-access-from-files", "--virtual-time-budget=15000"]


def render(repo: Path, vega: Path, out_dir: Path) -> Path:
    """dvc plots show in `repo` with the offline template pointed at `vega` (a node_modules folder)."""
    template = out_dir / "template.html"
    text = (ROOT / "scripts/offline_plots.html").read_text().replace("../node_modules", vega.resolve().as_uri())
    template.write_text(text)
    subprocess.run(["dvc", "plots", "show", "--html-template", str(template), "-o", str(out_dir / "page")],
                   cwd=repo, check=True, capture_output=True, text=True)
    return out_dir / "page/index.html"


def screenshot(page: Path, png: Path, size: str) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        sys.exit("chromium not found: apt-get install -y chromium")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={size}",
                        f"--screenshot={png.resolve()}", page.resolve().as_uri()],
                       check=True, capture_output=True, text=True, timeout=180)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=ROOT, help="built repository whose plots to show")
    p.add_argument("--vega", type=Path, default=ROOT / "node_modules", help="node_modules holding vega")
    p.add_argument("--out", type=Path, default=Path("plots.png"), help="PNG to write")
    p.add_argument("--size", default="1250,3600", help="browser window WIDTH,HEIGHT in pixels")
    args = p.parse_args(argv)
    if not (args.vega / "vega-embed").is_dir():
        sys.exit(f"{args.vega}: no vega-embed (npm install vega@5 vega-lite@5 vega-embed@6)")
    with tempfile.TemporaryDirectory() as tmp:
        page = render(args.repo, args.vega, Path(tmp))
        screenshot(page, args.out, args.size)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
