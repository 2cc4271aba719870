"""A shared run's split jobs: one at a time, in order, on a thread of their own (CPU) while the next union profiles
(the GPU); their verdicts taken in order once every run is done. A large union's members are read out of its one
report (read_out.py), a small one's split into reports of their own (split.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from ncucampaign.execute.attempt.context import RunContext
from ncucampaign.execute.process.short import answered
from ncucampaign.execute.shared.outcome import Handing, Refused
from ncucampaign.execute.shared.read_out import OWN_REPORTS, read_out
from ncucampaign.execute.shared.resumed import RESUMED_NOTE
from ncucampaign.execute.shared.split import Split, SplitJob, split_union
from ncucampaign.own_time import CLOCK
from ncucampaign.plan.expand import Invocation
from ncucampaign.plan.share.union import filter_words


class Splits:
    """The split jobs of one shared run (a context manager: its thread ends with it)."""

    def __init__(self, ctx: RunContext, hand: Handing) -> None:
        self.ctx, self.hand = ctx, hand
        self.pending: list[tuple[list[Invocation], str, Future[list[Split] | str]]] = []
        self.verified: Counter[tuple[str, ...] | None] = Counter()  # splits verified by their members' filters; refused
        self.resumed: set[str] = set()  # members read out of a union a stopped run had finished (resumed.py)
        self._thread = ThreadPoolExecutor(1)

    def __enter__(self) -> Splits:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._thread.shutdown(wait=True)

    def submit(self, job: SplitJob, resumed: bool = False) -> None:
        split = split_union if len(job.members) <= OWN_REPORTS else read_out
        if resumed:  # before the thread can see its members
            self.resumed.update(m.name for m in job.members)
        self.pending.append((list(job.members), job.shared.name, self._thread.submit(self._told, split, job)))

    def _told(self, split: Callable[[RunContext, SplitJob], list[Split] | str], job: SplitJob) -> list[Split] | str:
        """`split`'s verdicts; each member it recorded is told to the display now, while the next union profiles
        (what collect makes of them waits for the shared run's end). A resumed member is told once its note is on."""
        splits = split(self.ctx, job)
        if isinstance(splits, str):  # the union could not be split: its members go back, nothing is told
            return splits
        for done in splits:
            if done.ok and done.member.name not in self.resumed:
                self.ctx.target_finished(self.ctx.record(done.member.name))
        return splits

    def collect(self) -> list[Refused]:
        """The splits so far: the verified ones are done; the refused ones, in order."""
        refused: list[Refused] = []
        pending, self.pending = self.pending, []
        for members, name, future in pending:
            with CLOCK.waiting():  # the splits count their own phases; a Ctrl-C is taken between slices
                splits = answered(future)
            if isinstance(splits, str):
                self.hand.alone(members, splits, name)
                continue
            self.hand.outcome.done.extend(self.ctx.record(s.member.name) for s in splits if s.ok)
            self._noted([s for s in splits if s.ok and s.member.name in self.resumed])
            self.verified.update(tuple(filter_words(s.member.options)) if s.ok else None for s in splits)
            refused.extend(Refused(s.member, name, s.problem, s.detail) for s in splits if not s.ok)
        return refused

    def _noted(self, splits: list[Split]) -> None:
        """The manifest says which targets were read out on resume, of a shared run that had finished."""
        records = [self.ctx.record(s.member.name) for s in splits]

        def note() -> None:
            for record in records:
                record.message += RESUMED_NOTE

        if records:
            self.ctx.book.commit(note, *records)
