"""The engine of the desktop app (`python -m sidecar.engine`), one module per concern:

- core: the App that ties them together, and what a page hears when it connects;
- unlock, stored: opening the encrypted store (keyring, else a passphrase from the window) and
  what is kept in it;
- voice_session, link: the pipeline for the current settings, and the link to the gateway under it;
- commands: what the window asks for, handed the parts it acts on (`CommandTargets`);
- settings, wardrobe: the settings panel, and the outfits on offer and the one worn;
- presence, frame_stream: what the character shows (her state, and frames for a page without WebGL2).
"""

import sys

# httpx imports its command-line client (click, pygments) whenever they are installed (the gateway's uvicorn brings
# click). The engine never runs it; without it httpx takes 2.2 MiB less (PSS) and loads sooner. A None in
# sys.modules makes that import fail, and httpx defines a stub `main` in its place.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
