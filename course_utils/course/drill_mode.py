"""Timed drill mode (lesson 08): drills from the bank in a seeded random order, five minutes each.

``DrillSession(seed=8, count=5)`` picks drills from ``course_utils.drills`` (all categories, or
one) in an order fixed by the seed. Displayed in a notebook it is a widget: *Start drill* shows the
first drill's code and starts a five-minute clock that counts in the browser (an ipywidgets ``Play``
linked in JavaScript to a progress bar and a seconds counter, so it ticks while the kernel is busy);
the lesson 07 spot-the-bug card takes a hypothesis, then the diagnosis; *Submit* grades it and stops
the clock, *Reveal* shows the fix; *Next drill* serves the next one; *Finish round* scores the round
and records it. From code: ``start()``, ``answer(choice, hypothesis)``, ``reveal()``, ``next()``,
``finish()``. The terminal version is ``course drill`` (``course_utils.course.drill_cli``).

Scoring: a right answer within the time is 1 point, a right answer after the clock ran out ½, a wrong
one 0. Every answer also counts as a card answer (progress key "drills", lesson 07). Finished rounds
are kept in the progress file under their own key, "drill_sessions"::

    "drill_sessions": {"best": 0.8, "categories": {"losses": {"right": 3, "answered": 4}},
                       "sessions": [{"when": "...", "source": "notebook", "seed": 8, "score": 0.8, ...}]}

``history()``, ``history_text()`` and ``plot_history()`` read it back.
"""

from __future__ import annotations

import html
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from types import SimpleNamespace

from course_utils.core import progress
from course_utils.drills import CATEGORIES, Drill, all_drills, by_category, record_answer

KEY = "drill_sessions"
SECONDS = 300  # five minutes per drill
MAX_SESSIONS = 200  # sessions kept in the history (the oldest are dropped)
LETTERS = "ABCDEFGH"
START, NEXT, FINISH = "Start drill", "Next drill", "Finish round"


# --- choosing drills ---------------------------------------------------------------------------------


def category_name(name: str | None) -> str | None:
    """The bank's category for ``name`` (case-insensitive; a unique prefix such as "seed" works)."""
    if name is None:
        return None
    wanted = name.strip().lower()
    exact = [c for c in CATEGORIES if c == wanted]
    found = exact or [c for c in CATEGORIES if c.startswith(wanted)]
    if len(found) != 1:
        raise ValueError(f"no drill category {name!r}; choose one of: {', '.join(CATEGORIES)}")
    return found[0]


def pick(seed: int, category: str | None = None, count: int | None = 5) -> list[Drill]:
    """``count`` drills (all when None or more than there are) in an order fixed by ``seed``."""
    pool = by_category()[category_name(category)] if category else all_drills()
    if count is not None and count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    k = len(pool) if count is None else min(count, len(pool))
    return random.Random(f"drill-mode:{seed}").sample(pool, k)


# --- one answer and its points -------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One answered drill: which, the choice (a letter), right or not, the seconds it took."""

    drill_id: str
    category: str
    choice: str
    right: bool
    seconds: float
    late: bool

    @property
    def points(self) -> float:
        """1 for a right answer in time, ½ for a right answer after the clock ran out, else 0."""
        return (0.5 if self.late else 1.0) if self.right else 0.0


def clock_text(seconds: float) -> str:
    """Seconds as m:ss."""
    whole = max(0, int(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


def _letter(drill: Drill, choice: int | str) -> int:
    n = len(drill.question.choices)
    if isinstance(choice, str) and len(choice.strip()) == 1 and choice.strip().upper() in LETTERS[:n]:
        return LETTERS.index(choice.strip().upper())
    if isinstance(choice, int) and not isinstance(choice, bool) and 0 <= choice < n:
        return choice
    raise ValueError(f"choice must be a letter A-{LETTERS[n - 1]} or an index 0-{n - 1}, got {choice!r}")


def score_table(results: list[Result], seconds: int = SECONDS) -> str:
    """The round as a text table, with the total and the accuracy per category."""
    if not results:
        return "no drill answered yet"
    width = max(len(r.drill_id) for r in results) + 2
    lines = [f"  #  {'drill':<{width}}{'category':<13}answer  result  time   points"]
    for i, r in enumerate(results, 1):
        verdict = "right" if r.right else "wrong"
        late = " late" if r.late else ""
        lines.append(f"{i:>3}  {r.drill_id:<{width}}{r.category:<13}{r.choice:<8}{verdict:<8}"
                     f"{clock_text(r.seconds):<7}{r.points:g}{late}")
    points = sum(r.points for r in results)
    lines.append(f"score: {points:g} of {len(results)} points ({points / len(results):.0%}); "
                 f"{clock_text(seconds)} per drill, a late right answer counts half")
    per = _per_category(results)
    lines.append("per category: " + ", ".join(f"{c} {v['right']}/{v['answered']}" for c, v in per.items()))
    return "\n".join(lines)


def _per_category(results: list[Result]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for r in results:
        entry = out.setdefault(r.category, {"right": 0, "answered": 0})
        entry["answered"] += 1
        entry["right"] += int(r.right)
    return out


# --- the history in the progress file -----------------------------------------------------------------


def _empty_history() -> dict:
    return {"best": 0.0, "categories": {}, "sessions": []}


def history() -> dict:
    """Every recorded round: best score, accuracy per category, and the sessions in order."""
    data = progress.load().get(KEY)
    return data if isinstance(data, dict) else _empty_history()


def record_session(results: list[Result], seed: int, category: str | None = None,
                   source: str = "notebook", seconds: int = SECONDS) -> dict:
    """Add a finished round to the history (other progress keys are kept); return its entry."""
    if not results:
        raise ValueError("a round with no answered drill is not recorded")
    points = sum(r.points for r in results)
    entry = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "source": source, "seed": seed,
             "category": category, "seconds_per_drill": seconds, "count": len(results),
             "right": sum(r.right for r in results), "points": points,
             "score": round(points / len(results), 4), "drills": [asdict(r) for r in results]}
    data = progress.load()
    hist = data.get(KEY)
    if not isinstance(hist, dict):
        hist = data[KEY] = _empty_history()
    hist.setdefault("sessions", []).append(entry)
    hist["sessions"] = hist["sessions"][-MAX_SESSIONS:]
    hist["best"] = round(max(hist.get("best", 0.0), entry["score"]), 4)
    totals = hist.setdefault("categories", {})
    for name, counts in _per_category(results).items():
        total = totals.setdefault(name, {"right": 0, "answered": 0})
        total["right"] += counts["right"]
        total["answered"] += counts["answered"]
    progress.save(data)
    return entry


def history_text(hist: dict | None = None) -> str:
    """The history in a few lines: rounds, last and best score, accuracy per category."""
    hist = history() if hist is None else hist
    sessions = hist.get("sessions", [])
    if not sessions:
        return ("no timed drill rounds recorded yet: finish a round in the widget, or run "
                "`course drill` in a terminal")
    last = sessions[-1]
    lines = [f"{len(sessions)} round(s); last {last['score']:.0%} ({last['source']}), "
             f"best {hist.get('best', 0.0):.0%}"]
    cats = hist.get("categories", {})
    if cats:
        lines.append("accuracy per category: " + ", ".join(
            f"{c} {v['right']}/{v['answered']}" for c, v in sorted(cats.items())))
    return "\n".join(lines)


def plot_history(hist: dict | None = None):
    """A small figure: each round's score and the best so far; accuracy per category beside it."""
    import matplotlib.pyplot as plt

    hist = history() if hist is None else hist
    sessions = hist.get("sessions", [])
    fig, (left, right) = plt.subplots(1, 2, figsize=(6, 2.6), dpi=80,
                                      gridspec_kw={"width_ratios": (3, 2)})
    scores = [100 * s["score"] for s in sessions]
    rounds = range(1, len(scores) + 1)
    if scores:
        best = [max(scores[:i]) for i in rounds]
        left.plot(rounds, scores, "o-", label="round")
        left.plot(rounds, best, "--", color="gray", label="best so far")
        left.legend(fontsize=7, loc="lower right")
    else:
        left.text(0.5, 0.5, "no rounds yet", ha="center", va="center", transform=left.transAxes)
    left.set(ylim=(-5, 105), xlabel="round", ylabel="score (%)", title="timed drills")
    cats = sorted(hist.get("categories", {}).items())
    if cats:
        right.barh([c for c, _ in cats], [100 * v["right"] / max(v["answered"], 1) for _, v in cats])
    right.set(xlim=(0, 100), xlabel="right (%)", title="per category")
    right.tick_params(labelsize=7)
    left.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


# --- a round --------------------------------------------------------------------------------------------


class DrillSession:
    """A round of timed drills (lesson 08): seeded order, five minutes each, scored and recorded."""

    def __init__(self, seed: int | None = None, category: str | None = None, count: int | None = 5,
                 seconds: int = SECONDS, source: str = "notebook",
                 clock: Callable[[], float] = time.monotonic):
        self.seed = secrets.randbelow(10_000) if seed is None else seed
        self.category = category_name(category)
        self.drills = pick(self.seed, self.category, count)
        self.seconds, self.source, self.clock = seconds, source, clock
        self.index = 0
        self.results: list[Result] = []
        self.recorded: dict | None = None
        self.controls: SimpleNamespace | None = None
        self._started_at: float | None = None

    # --- state ------------------------------------------------------------------------------------
    @property
    def current(self) -> Drill | None:
        """The drill being served (None once the round is over)."""
        return self.drills[self.index] if self.index < len(self.drills) else None

    @property
    def answered(self) -> bool:
        """Whether the current drill has been answered."""
        return len(self.results) > self.index

    @property
    def score(self) -> float:
        """Points so far over drills answered (0 before any answer)."""
        return sum(r.points for r in self.results) / len(self.results) if self.results else 0.0

    def elapsed(self) -> float:
        """Seconds on the current drill's clock (0 before it starts)."""
        return 0.0 if self._started_at is None else self.clock() - self._started_at

    # --- the round, from code -------------------------------------------------------------------------
    def start(self) -> str:
        """Start the current drill's clock; return the drill as text (code, question, choices)."""
        drill = self._need_current()
        if self._started_at is None:
            self._started_at = self.clock()
        return self.card_text(drill)

    def card_text(self, drill: Drill) -> str:
        """A drill without its title (the title would give the bug away): code, question, choices."""
        q = drill.question
        n = self.drills.index(drill) + 1
        lines = [f"Drill {n} of {len(self.drills)} · {drill.category} · {clock_text(self.seconds)} "
                 "on the clock", "", *("    " + ln for ln in drill.buggy_code.rstrip("\n").splitlines()),
                 "", f"Q: {q.prompt}"]
        lines += [f"  {LETTERS[i]}) {choice}" for i, choice in enumerate(q.choices)]
        return "\n".join(lines)

    def answer(self, choice: int | str, hypothesis: str) -> str:
        """Grade the current drill's answer (a letter or an index) given a written hypothesis."""
        if not hypothesis or not hypothesis.strip():
            raise ValueError("write your hypothesis first: what is wrong, and what would you "
                             "measure to confirm it?")
        result = self._grade(_letter(self._need_current(), choice), hypothesis, record_card=True)
        return self._feedback(result)

    def reveal(self) -> str:
        """The current (or last) drill's fix and explanation; only after it was answered."""
        from course_utils.course.bugcard import BugCard

        drill = self.drills[min(self.index, len(self.drills) - 1)]
        if len(self.results) <= self.drills.index(drill):
            raise RuntimeError("answer the drill first: the reveal comes after your diagnosis")
        return BugCard(drill).reveal()

    def next(self) -> str | None:
        """Move to the next drill and start its clock; its text, or None when the round is over."""
        if not self.answered:
            raise RuntimeError("answer the current drill before moving on")
        self.index += 1
        self._started_at = None
        return self.start() if self.current is not None else None

    def finish(self, record: bool = True) -> str:
        """End the round: record it in the history (once) and return the score table."""
        if record and self.results and self.recorded is None:
            self.recorded = record_session(self.results, self.seed, self.category, self.source,
                                           self.seconds)
        return self.table()

    def table(self) -> str:
        return score_table(self.results, self.seconds)

    def _need_current(self) -> Drill:
        drill = self.current
        if drill is None:
            raise RuntimeError("the round is over: call finish()")
        if self.answered:
            raise RuntimeError("this drill is answered: call next()")
        return drill

    def _grade(self, index: int, hypothesis: str, record_card: bool) -> Result:
        drill = self._need_current()
        if self._started_at is None:
            self._started_at = self.clock()
        seconds = self.elapsed()
        right = index == drill.question.answer
        if record_card:
            record_answer(drill.id, right, hypothesis)
        result = Result(drill.id, drill.category, LETTERS[index], right, round(seconds, 1),
                        seconds > self.seconds)
        self.results.append(result)
        return result

    def _feedback(self, r: Result) -> str:
        q = self.drills[len(self.results) - 1].question
        took = f"{clock_text(r.seconds)} of {clock_text(self.seconds)}"
        if r.late and r.right:
            took += ", late: half a point"
        if r.right:
            return f"✔ Right: {r.choice}) {q.choices[q.answer]} ({took})"
        return (f"✘ Not quite: you chose {r.choice}; the answer is {LETTERS[q.answer]}) "
                f"{q.choices[q.answer]} ({took})")

    # --- display ----------------------------------------------------------------------------------------
    def text(self) -> str:
        """The round as plain text (what a terminal or nbval sees)."""
        where = f"category {self.category}" if self.category else "all categories"
        return (f"Timed drills: {len(self.drills)} drills ({where}, seed {self.seed}), "
                f"{clock_text(self.seconds)} each. Press '{START}' in the widget; from code: "
                "start(), answer('B', 'my hypothesis'), reveal(), next(), finish().")

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs):
        from course_utils.course.widgets import bundle

        return bundle(self.widget(), self.text(), **kwargs)

    def widget(self):
        """The round as ipywidgets; the controls stay reachable as ``self.controls``."""
        return _build_widget(self)


def _build_widget(session: DrillSession):
    import ipywidgets as w

    from course_utils.course.bugcard import BugCard

    n = len(session.drills)
    clock = w.Play(value=0, min=0, max=session.seconds, step=1, interval=1000, show_repeat=False,
                   description="clock", layout={"width": "auto"})
    bar = w.IntProgress(value=0, min=0, max=session.seconds, description="time used",
                        layout={"width": "260px"})
    counter = w.IntText(value=0, disabled=True, description="seconds", layout={"width": "170px"})
    links = [w.jslink((clock, "value"), (bar, "value")),  # ticks in the browser, without the kernel
             w.jslink((clock, "value"), (counter, "value"))]
    header = w.HTML()
    status = w.HTML(f"{clock_text(session.seconds)} per drill. Write a hypothesis before you pick "
                    f"an answer. Press <b>{START}</b> when ready.")
    start = w.Button(description=START, button_style="primary")
    nxt = w.Button(description=NEXT, disabled=True)
    finish = w.Button(description=FINISH, disabled=True)
    card_box = w.VBox([])
    summary = w.Output()
    ui = SimpleNamespace(clock=clock, bar=bar, counter=counter, links=links, header=header, status=status,
                         start=start, next=nxt, finish=finish, card_box=card_box, summary=summary,
                         card=None)
    session.controls = ui

    def show_header():
        drill = session.current
        if drill is not None:
            header.value = (f"<b>Drill {session.index + 1} of {n}</b> · category: "
                            f"{html.escape(drill.category)} · score so far: "
                            f"{sum(r.points for r in session.results):g}/{len(session.results)}")

    def restart_clock():
        clock.playing = False
        clock.value = 0
        clock.playing = True

    def serve():
        drill = session.current
        session.start()
        card = BugCard(drill)
        box = card.widget()
        box.children = box.children[1:]  # no title: it would name the bug
        card.controls.submit.on_click(on_submit)  # runs after the card's own grading handler
        ui.card = card
        card_box.children = [box]
        show_header()
        status.value = f"The clock is running: {clock_text(session.seconds)}."
        restart_clock()

    def on_start(_):
        start.disabled = True
        serve()

    def on_submit(_):
        card = ui.card.controls
        if session.answered or card.choices.index is None:
            return
        result = session._grade(card.choices.index, card.hypothesis.value, record_card=False)
        clock.playing = False
        for control in (card.submit, card.choices, card.hypothesis):
            control.disabled = True
        late = " (after the clock ran out: half a point)" if result.late and result.right else ""
        status.value = (f"{'Right' if result.right else 'Wrong'} in {clock_text(result.seconds)}{late}. "
                        f"Press Reveal for the fix, then {NEXT}.")
        last = session.index == n - 1
        nxt.disabled = last
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
    title = w.HTML(f"<b>Timed drills</b> · {n} drills, seed {session.seed} · "
                   f"{clock_text(session.seconds)} each")
    return w.VBox([title, header, w.HBox([clock, bar, counter]), status, start, card_box,
                   w.HBox([nxt, finish]), summary])
