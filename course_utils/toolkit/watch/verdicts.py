"""The watcher's verdicts that gather what several checks saw (``course watch``): a value that went
non-finite (and where it first showed), parameters without gradients (and where the graph was
cut), ops that fall back on a Mac, and non-contiguous tensors where in-place updates are lost.
``Watcher`` inherits them.
"""

from __future__ import annotations

import math
import sys
import traceback

from course_utils.toolkit.watch.findings import Finding


class Verdicts:
    """Mixed into ``Watcher``: uses its ``log``, ``models``, ``ops``, ``step`` and sites."""

    def fail(self, err: BaseException, where: str) -> None:
        """Stop watching after an error of the watcher itself; the script goes on."""
        if not self.live:
            return
        self.live = False
        self.ops.broken = True
        print(
            f"course watch: internal error in {where} ({type(err).__name__}: {err}); watching "
            "stops here, your script goes on",
            file=sys.stderr,
        )
        if self.log.verbose:
            traceback.print_exception(err, file=sys.stderr)

    def on_values(self, loss, gnorm: dict, norms: list, ow) -> None:
        """The numbers one check read: arm a deep window when something went non-finite or spiked."""
        total = math.sqrt(sum(v * v for v in gnorm.values() if math.isfinite(v)))
        bad = [
            n
            for n, v in (
                ("the loss", loss),
                ("a gradient", max(gnorm.values(), default=0.0)),
                ("a parameter", max(norms, default=0.0)),
            )
            if v is not None and not math.isfinite(v)
        ]
        if bad and self._pending_nan is None and not self.log.has("non-finite"):
            self._pending_nan = (self.step + 1, " and ".join(bad), self.step_site)
            self._armed = True
        if self._last_gnorm and total > 10 * self._last_gnorm:
            self._armed = True
        self._last_gnorm = total

    def _finish_run(self) -> None:
        """The verdicts that need the whole run: coverage where no step was seen whole, a warm-up that
        never finished, a loss at chance, a moving-average copy that never changed."""
        try:
            self._coverage_at_end()
            for ow in list(self.optimizers.values()):
                ow.finish()
            self.ops.losses.chance.finish()
            self.copies.finish()
        except Exception as err:  # noqa: BLE001 - reported, and the script has ended anyway
            self.fail(err, "finish")

    def _coverage_at_end(self) -> None:
        """No step was seen whole (the budget cut every window): the models found are judged at the
        end, while the script still holds them and every optimizer that stepped."""
        live = self._all_optimizers()
        if self._coverage_due and not self._coverage_judged and live and len(live) == len(self.optimizers):
            self.models.coverage(live, self.step, seen_whole=False)

    def nan_origin(self, what: str, site) -> None:
        if self._pending_nan is None:
            self._pending_nan = (self.step + 1, what, site)

    def _flush_nan(self) -> None:
        if self._pending_nan is None or self.log.has("non-finite") or (self.live and self.ops.open):
            return
        step, what, site = self._pending_nan
        self.log.add(
            Finding(
                "non-finite",
                f"NaN/Inf first seen in {what} at step {step}; the op that "
                "made it ran in an unsampled step (rerun with --deep-every 1 to name it)",
                site,
                step,
                subject="first seen",
            )
        )

    def report_no_gradient(self, p, checks: int) -> None:
        if p is None:
            self.log.add(
                Finding(
                    "no gradient",
                    "backward() ran but no parameter of the optimizer "
                    "received a gradient: the loss is not connected to the model" + self._cuts(),
                    self.loss_site,
                    self.step,
                    subject="all parameters",
                )
            )
            return
        if self.models.roots and not any(q is p for r in self.models.live_roots() for q in r.parameters()):
            return  # not in any model: reported as a stale optimizer tensor
        name = self.models.name(p, "a parameter")
        owner = name.rsplit(".", 1)[0] if "." in name else name
        self.log.add(
            Finding(
                "no gradient",
                f"{name} (and the rest of {owner}) never received a gradient "
                f"in {checks} checked steps{self._cuts()}",
                self.models.site_of(p),
                self.step,
                subject=owner,
            )
        )

    def _cuts(self) -> str:
        cuts = list(self.ops.cuts.values())[:2]
        return f"; the graph is cut at {' and '.join(cuts)}" if cuts else ""

    def fallback_op(self, op: str) -> bool:
        from course_utils.toolkit.emulate import mps_fallback

        emulation = mps_fallback.active()
        if emulation is not None:
            return emulation.falls_back(op)
        return mps_fallback.op_matches(op, mps_fallback.ALWAYS_FALLBACK)

    def _check_layout(self, optimizer) -> None:
        from course_utils.toolkit.layout import audit
        from course_utils.toolkit.sentinel import _affected

        affected, label = _affected()
        if not affected:
            return
        roots = self.models.live_roots()
        for row in audit(optimizer, names=roots[0] if roots else None):
            if row.kind in ("parameter", "optimizer state"):
                self.log.add(
                    Finding(
                        "non-contiguous",
                        f"{row.name} has strides {row.strides}: in-place "
                        f"addcmul_/addcdiv_ into it are lost {label}",
                        self.where_step,
                        self.step + 1,
                        subject=row.name,
                    )
                )
