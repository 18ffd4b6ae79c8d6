"""Imported by the multiprocessing forkserver only (``pool.Workers`` preloads it).

It puts the server, and so every worker it forks, in a session of its own:
a terminal's Ctrl-C (or any signal to the scan's process group) reaches the
scan alone, which stops its workers itself; after a SIGKILL of the whole
group the workers see their lifeline (``pool``) close and exit, and the
server follows. When the server exits (its clients are all gone) it removes
multiprocessing's ``pymp-*`` folder that held its socket: a parent that was
SIGKILLed could not.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil


def _remove_socket_folder() -> None:
    from multiprocessing import forkserver

    # Set by forkserver.main() in this process: the listener's path.
    address = getattr(
        getattr(forkserver, "_forkserver", None), "_forkserver_address", None
    )
    if isinstance(address, str) and address and not address.startswith("\0"):
        folder = os.path.dirname(address)
        if os.path.basename(folder).startswith("pymp-"):
            shutil.rmtree(folder, ignore_errors=True)


if hasattr(os, "setsid"):
    with contextlib.suppress(OSError):  # already a session leader
        os.setsid()
atexit.register(_remove_socket_folder)
