"""Child processes that end with their parent: `serve`'s web server and worker, and the beat a worker forks.

Linux only (prctl PR_SET_PDEATHSIG); elsewhere nothing happens and a supervisor must stop its children itself.
"""

import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(sig=signal.SIGTERM):
    """This process gets `sig` when its parent ends, however it ends (SIGKILL included). Returns False where the
    system has no such thing."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig)) == 0
    except (OSError, AttributeError):
        return False


def end_with_worker(sender=None, **_):
    """Celery's `beat_embedded_init` (in the beat process `worker --beat` forks): end when the worker ends. A worker
    killed by SIGKILL or the out-of-memory killer used to leave its beat running as an orphan, and the restarted
    worker started another, so periodic tasks were sent twice."""
    parent = getattr(sender, "_parent_pid", None)  # multiprocessing records the pid that forked it
    die_with_parent()
    if parent and os.getppid() != parent:  # the worker died before the line above: end now
        os.kill(os.getpid(), signal.SIGTERM)
