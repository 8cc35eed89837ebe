"""Timed drill mode as ipywidgets (lesson 08): a clock fitted to each drill that ticks in the browser.

An ipywidgets ``Play`` linked in JavaScript to a progress bar and a seconds counter, so the clock
ticks while the kernel is busy; the lesson 07 spot-the-bug card (``bugcard``) takes the hypothesis
and the diagnosis. ``build_widget(session)`` drives a ``drill_mode.DrillSession``; ipywidgets is
imported only when a widget is built.
"""

from __future__ import annotations

import html
from types import SimpleNamespace

from course_utils.learner.drilling import fix_entry as fixit
from course_utils.learner.drilling.history import history_text, plot_history
from course_utils.learner.drilling.scoring import clock_text, drills_text
from course_utils.learner.widgets import CODE_CLASS, row

START, NEXT, FINISH, RUN_FIX = "Start drill", "Next drill", "Finish round", "Run my fix"
VERDICT_CLASS = "mpsd-fix-verdict"  # the fix box's verdict (the browser test reads it)


def build_widget(session):
    """The round of ``session`` (a ``mode.DrillSession``) as ipywidgets; the controls stay
    reachable as ``session.controls``."""
    import ipywidgets as w

    from course_utils.learner.bugcard import BugCard

    n = len(session.drills)
    # The clock ticks in the browser; the learner sees its bar and seconds but not its Play
    # buttons, which would stop or reset the shown clock while the kernel's clock runs on.
    clock = w.Play(value=0, min=0, max=session.seconds, step=1, interval=1000, show_repeat=False,
                   description="clock", disabled=True, layout={"display": "none"})
    bar = w.IntProgress(value=0, min=0, max=session.seconds, description="time used",
                        layout={"width": "260px", "max_width": "100%"})
    counter = w.IntText(value=0, disabled=True, description="seconds", layout={"width": "170px"})
    links = [w.jslink((clock, "value"), (bar, "value")),  # ticks in the browser, without the kernel
             w.jslink((clock, "value"), (counter, "value"))]
    header = w.HTML()
    status = w.HTML(f"{session.clocks_text()}. Write a hypothesis before you pick "
                    f"an answer. Press <b>{START}</b> when ready.")
    start = w.Button(description=START, button_style="primary")
    nxt = w.Button(description=NEXT, disabled=True)
    finish = w.Button(description=FINISH, disabled=True)
    card_box = w.VBox([])
    summary = w.Output()
    ui = SimpleNamespace(clock=clock, bar=bar, counter=counter, links=links, header=header, status=status,
                         start=start, next=nxt, finish=finish, card_box=card_box, summary=summary,
                         card=None, fix=None)
    session.controls = ui

    def show_header():
        drill = session.current
        if drill is not None:
            why = session.reasons.get(drill.id)
            header.value = (f"<b>Drill {session.index + 1} of {n}</b> · category: "
                            f"{html.escape(drill.category)} · score so far: "
                            f"{sum(r.points for r in session.results):g}/{len(session.results)}"
                            + (f"<br><i>chosen: {html.escape(why)}</i>" if why else ""))

    def restart_clock():
        clock.playing = False
        clock.value = 0
        clock.playing = True

    def serve():
        drill = session.current
        session.start()
        card = BugCard(drill, record=False)  # a timed answer is not a card answer
        box = card.widget()
        box.children = box.children[1:]  # no title: it would name the bug
        card.controls.submit.on_click(on_submit)  # runs after the card's own grading handler
        ui.card = card
        card_box.children = [box, fix_box(drill)]
        show_header()
        status.value = f"The clock is running: {clock_text(session.seconds)}."
        clock.max = bar.max = session.seconds  # this drill's clock, before it restarts
        restart_clock()

    def fix_box(drill):
        """Fix-it mode: the buggy code to edit, judged by the drill's own measurement."""
        if not fixit.has_fixit(drill):
            ui.fix = None
            return w.HTML("<i>This drill has no fix-it mode: answer with a letter.</i>")
        ui.fix = fix_controls(w, drill)
        ui.fix.run.on_click(on_fix)
        return w.VBox([w.HTML("<b>Or fix it:</b> edit the code (indent with spaces: Tab moves to the "
                              "next control); it passes when the symptom is gone and the code still "
                              "does its job."), ui.fix.editor,
                       row([ui.fix.run, ui.fix.waited]), ui.fix.verdict, ui.fix.judging])

    def on_fix(_):
        """Judge the edit; the judging bar counts in the browser meanwhile, the editor keeps the edit."""
        fix = ui.fix
        fix.run.disabled = True
        fix.verdict.value = (f"<i>Judging your edit in a separate process (stopped after "
                             f"{fixit.TIME_LIMIT_S:g} s)...</i>")
        fix.judging.value, fix.judging.playing = 0, True
        fix.waited.layout.visibility = "visible"
        answered_before = session.answered
        try:
            text = session.fix(fix.editor.value)
        except KeyboardInterrupt:  # the kernel's stop button
            text = "judging stopped (the kernel was interrupted): the edit was not counted"
        except Exception as err:  # noqa: BLE001 - the widget must say why, never hang on "judging"
            text = f"your edit could not be judged: {type(err).__name__}: {err}"
        finally:
            fix.judging.playing = False
            fix.waited.layout.visibility = "hidden"
            fix.run.disabled = False
        if session.answered and not answered_before:  # the fix answered the drill: status first,
            close_drill(session.results[-1], by_fix=True)  # so the verdict never shows without it
        fix.verdict.value = f"<pre>{html.escape(text)}</pre>"

    def on_start(_):
        start.disabled = True
        serve()

    def on_submit(_):
        card = ui.card.controls
        if session.answered or card.choices.index is None:
            return
        close_drill(session._grade(card.choices.index, card.hypothesis.value))

    def close_drill(result, by_fix=False):
        card = ui.card.controls
        clock.playing = False
        for control in (card.submit, card.choices, card.hypothesis):
            control.disabled = True
        late = " (after the clock ran out: half a point)" if result.late and result.right else ""
        how = "Fixed" if by_fix else ("Right" if result.right else "Wrong")
        status.value = (f"{how} in {clock_text(result.seconds)}{late}. "
                        f"Press Reveal for the fix, then {NEXT}.")
        card.reveal.disabled = False
        nxt.disabled = session.index == n - 1
        finish.disabled = False
        show_header()

    def on_next(_):
        if not session.answered:
            return
        session.index += 1
        session._started_at = None
        nxt.disabled = finish.disabled = True
        serve()

    def on_finish(_):
        import matplotlib.pyplot as plt
        from IPython.display import display

        clock.playing = False
        start.disabled = nxt.disabled = finish.disabled = True
        if ui.fix is not None:  # the round is recorded: a later edit would not count
            ui.fix.run.disabled = ui.fix.editor.disabled = True
        table = session.finish()
        summary.outputs = ()
        with summary:
            print(table)
            print(history_text())
            fig = plot_history()
            display(fig)
            plt.close(fig)
        status.value = ("Round recorded in your progress. For a new round, change the seed and run "
                        "the cell again.")

    def on_tick(change):
        if change["new"] >= session.seconds and not session.answered and session.current is not None:
            status.value = ("<b>Time is up.</b> Answer anyway (a right answer now counts half), "
                            "then press Reveal.")

    start.on_click(on_start)
    nxt.on_click(on_next)
    finish.on_click(on_finish)
    clock.observe(on_tick, names="value")
    title = w.HTML(f"<b>Timed drills</b> · {drills_text(n)}, seed {session.seed} · {session.clocks_text()}")
    return w.VBox([title, header, row([clock, bar, counter]), status, start, card_box,
                   row([nxt, finish]), summary])


def fix_controls(w, drill) -> SimpleNamespace:
    """The fix box's controls: the code editor (monospace, lines never wrapped), the run button,
    a judging bar linked in the browser to a hidden ``Play`` (it counts while the kernel waits on
    the judge) and the verdict."""
    height = f"{18 * len(drill.buggy_code.splitlines()) + 20}px"
    editor = w.Textarea(value=drill.buggy_code, description="Fix it",
                        layout={"width": "95%", "height": height})
    editor.add_class(CODE_CLASS)
    verdict = w.HTML()
    verdict.add_class(VERDICT_CLASS)
    limit = int(fixit.TIME_LIMIT_S)
    judging = w.Play(value=0, min=0, max=limit, step=1, interval=1000, show_repeat=False,
                     disabled=True, layout={"display": "none"})
    waited = w.IntProgress(value=0, min=0, max=limit, description="judging",
                           layout={"width": "260px", "visibility": "hidden"})
    return SimpleNamespace(editor=editor, run=w.Button(description=RUN_FIX, layout={"width": "max-content"}),
                           verdict=verdict, judging=judging, waited=waited,
                           link=w.jslink((judging, "value"), (waited, "value")))
