"""Progress of a running task: the user's callback, or a bar on a terminal or in a notebook.

`progress=None` (the default) draws a bar when there is someone to see it: an HTML bar in a
Jupyter notebook, a text bar like the command line's on a terminal's stderr, nothing otherwise
(a script whose output goes to a file). `progress=False` never draws; `progress=True` always
does; a callable is called as progress(done, total) on every change.
"""
import html
import sys
import time

__all__ = ["make_progress"]

_WIDTH = 30


def _in_notebook():
    # Only an IPython already imported can be running this code: never import it ourselves.
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _Callback:
    def __init__(self, fn):
        self._fn = fn

    def update(self, phase, done, total):
        self._fn(done, total)

    def finish(self):
        pass


class _Silent:
    def update(self, phase, done, total):
        pass

    def finish(self):
        pass


class _TerminalBar:
    """The command line's bar (client/progress_bar.cc): one line on stderr, cleared at the end."""

    def __init__(self, stream):
        self._stream = stream
        self._phase = None
        self._phase_start = 0.0
        self._drawn = False

    def update(self, phase, done, total):
        now = time.monotonic()
        if phase != self._phase:
            self._phase, self._phase_start = phase, now
        filled = _WIDTH * done // total if total else _WIDTH
        eta = ""
        if 0 < done < total:
            eta = f"ETA {(now - self._phase_start) / done * (total - done):.0f}s"
        self._stream.write(f"\r{phase:>10} [{'#' * filled}{'.' * (_WIDTH - filled)}] "
                           f"{done:>4}/{total:<4} {eta:<10}")
        self._stream.flush()
        self._drawn = True

    def finish(self):
        if self._drawn:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._drawn = False


class _NotebookBar:
    """An HTML <progress> element updated in place in the cell's output."""

    def __init__(self):
        from IPython.display import HTML, display
        self._html = HTML
        self._handle = display(HTML(self._render("queued", 0, 0)), display_id=True)

    @staticmethod
    def _render(phase, done, total):
        return (f'<progress value="{done}" max="{max(total, 1)}" style="width:20em"></progress> '
                f"<code>{html.escape(phase)} {done}/{total}</code>")

    def update(self, phase, done, total):
        self._handle.update(self._html(self._render(phase, done, total)))

    def finish(self):
        pass  # the finished bar stays, as tqdm's do


def make_progress(progress):
    if progress is False:
        return _Silent()
    if callable(progress):
        return _Callback(progress)
    if progress is not None and progress is not True:
        raise TypeError(f"progress: expected None, True, False or a callable (done, total), "
                        f"got {progress!r}")
    if _in_notebook():
        return _NotebookBar()
    if progress is True or (sys.stderr is not None and sys.stderr.isatty()):
        return _TerminalBar(sys.stderr)
    return _Silent()
