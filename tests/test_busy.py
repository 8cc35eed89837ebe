"""Progress bars show while a person watches and never in a notebook run by nbclient or nbval."""

from types import SimpleNamespace

import pytest

from course_utils.toolkit import busy


@pytest.fixture
def kernel(monkeypatch):
    """A stand-in IPython shell whose kernel got the last cell with ``allow_stdin`` as set."""
    shell = SimpleNamespace(kernel=SimpleNamespace(_allow_stdin=False))
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    return shell.kernel


def test_a_run_by_nbclient_or_nbval_gets_the_loop_unchanged_and_no_bar(kernel, capsys):
    items = [1, 2, 3]
    assert busy.steps(items, "counting") is items
    with busy.working("waiting"):
        pass
    assert capsys.readouterr().err == ""


def test_jupyterlab_gets_a_bar_that_yields_every_item(kernel, capsys):
    kernel._allow_stdin = True  # JupyterLab sends its cells with stdin allowed
    wrapped = busy.steps([1, 2, 3], "counting")
    assert not isinstance(wrapped, list) and list(wrapped) == [1, 2, 3]
    with busy.working("waiting", every=0.01):
        pass
    assert "waiting" in capsys.readouterr().err  # outside a real kernel tqdm.auto writes text


def test_outside_a_kernel_a_bar_shows_only_on_a_terminal(monkeypatch):
    monkeypatch.setattr("IPython.get_ipython", lambda: None)
    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    assert not busy.interactive()
