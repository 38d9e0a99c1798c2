"""gres/shard and gres/mps: one GPU shared by several jobs, as Slurm 22.05 schedules them.

Worked example: node n1 has Gres=gpu:2,shard:8, so 4 shards on each GPU (per_gpu). Job A asks
--gres=shard:3: no GPU carries shards yet, A takes 3 of GPU 0's 4. GPU 0 is no longer free for a
whole-GPU job. Job B asks shard:3: GPU 0 has 1 left, so B takes 3 on GPU 1. Job C asks shard:3:
no GPU has 3 left, C waits (Resources); so does a job asking gpu:1 (both GPUs carry shards). When
A ends, GPU 0's shards are all back and GPU 0 is whole again.

Slurm's rules, kept here:
  - a job's shards (or mps) on a node come from one GPU (22.05 has no MULTIPLE_SHARING_GRES_PJ),
    so shard:K needs a GPU with K free: K above every GPU's count can never run;
  - a GPU held whole has no shards or mps to give; a GPU with shards in use is not free whole,
    nor for mps (and the other way round);
  - shards spread evenly over the node's GPUs (Count=8 over 2 GPUs: 4 each; a remainder goes to
    the first GPUs), mps likewise (mps:200 over 2 GPUs: 100 each, 100 = the whole GPU).

An allocation carries the GPU its shares are on in `gpus` (the job uses that device: the cgroup
lets it through, CUDA_VISIBLE_DEVICES names it) and the count in `shares`, with `share_name`
saying which gres; whole_gpus() is what counts as gres/gpu.

Pure: no I/O, no clock. The controller keeps each node's use (hold/release), the scheduler a
ShareBook per node while it builds a plan.
"""

from __future__ import annotations

from ..model import GresRequest, NodeAllocation

SHARING = ("shard", "mps")  # the gres that share a GPU; "gpu" is the one they share


def request(gres: list[GresRequest]) -> tuple[str, int]:
    """('shard', 3) for --gres=shard:3; ('', 0) when the job shares no GPU."""
    for g in gres:
        if g.name in SHARING:
            return g.name, g.count
    return "", 0


def per_gpu(total: int, gpus: list[int]) -> dict[int, int]:
    """`total` spread evenly over `gpus` (in index order), the remainder to the first ones."""
    gpus = sorted(gpus)
    if not gpus:
        return {}
    each, extra = divmod(total, len(gpus))
    return {g: each + (1 if i < extra else 0) for i, g in enumerate(gpus)}


def configured(gres: list[GresRequest], gpus: list[int]) -> dict[tuple[int, str], int]:
    """(GPU index, 'shard'|'mps') -> how many a node's Gres= gives that GPU."""
    out: dict[tuple[int, str], int] = {}
    for name in SHARING:
        total = sum(g.count for g in gres if g.name == name)
        for gpu, count in per_gpu(total, gpus).items() if total else ():
            out[(gpu, name)] = count
    return out


def whole_gpus(a: NodeAllocation) -> list[int]:
    """The GPUs an allocation holds whole (gres/gpu); none when it holds shares of one."""
    return [] if a.share_name else list(a.gpus)


# ---- a node's use: {GPU index: (name, count in use)} -------------------------------------------
def hold(use: dict[int, tuple[str, int]], a: NodeAllocation) -> None:
    for gpu, count in zip(a.gpus, a.shares) if a.share_name else ():
        name, used = use.get(gpu, (a.share_name, 0))
        use[gpu] = (name, used + count)


def release(use: dict[int, tuple[str, int]], a: NodeAllocation) -> None:
    for gpu, count in zip(a.gpus, a.shares) if a.share_name else ():
        name, used = use.get(gpu, (a.share_name, 0))
        if used - count > 0:
            use[gpu] = (name, used - count)
        else:
            use.pop(gpu, None)


def view_entries(gres: list[GresRequest], gpus: list[int], use: dict[int, tuple[str, int]]
                 ) -> tuple[tuple[int, str, int, int], ...]:
    """NodeView.shares: (GPU index, name, configured on it, in use by jobs of that name)."""
    return tuple((gpu, name, count, use[gpu][1] if use.get(gpu, ("", 0))[0] == name else 0)
                 for (gpu, name), count in sorted(configured(gres, gpus).items()))


class ShareBook:
    """The shares of one node's GPUs while a plan is built (FreeNode keeps one)."""

    __slots__ = ("total", "use")

    def __init__(self, entries=()):
        self.total = {(gpu, name): count for gpu, name, count, _ in entries}
        self.use: dict[int, tuple[str, int]] = {gpu: (name, used) for gpu, name, _, used in entries
                                                if used}

    @classmethod
    def of(cls, total: dict[tuple[int, str], int], use: dict[int, tuple[str, int]]) -> "ShareBook":
        book = cls()
        book.total, book.use = total, use
        return book

    def copy(self) -> "ShareBook":
        return ShareBook.of(self.total, dict(self.use))

    def available(self, name: str, gpu: int, free_gpus) -> int:
        total = self.total.get((gpu, name), 0)
        if gpu in self.use:
            used_name, used = self.use[gpu]
            return total - used if used_name == name else 0
        return total if gpu in free_gpus else 0

    def pick(self, name: str, count: int, free_gpus) -> int | None:
        """The GPU a job's `count` shares come from: one already shared first (whole GPUs stay
        free for whole-GPU jobs), then the one left with fewest, then the lowest index; None:
        none has enough."""
        fit = [(gpu not in self.use, self.available(name, gpu, free_gpus) - count, gpu)
               for gpu, n in self.total
               if n == name and self.available(name, gpu, free_gpus) >= count]
        return min(fit)[2] if fit and count > 0 else None

    def fits(self, name: str, count: int, free_gpus) -> bool:
        return not name or self.pick(name, count, free_gpus) is not None

    def hold(self, a: NodeAllocation) -> None:
        hold(self.use, a)

    def release(self, a: NodeAllocation) -> None:
        release(self.use, a)

    def busy(self, gpu: int) -> bool:
        return gpu in self.use


def still_fits(entries, a: NodeAllocation, free_gpus) -> bool:
    """The controller's re-check of a planned allocation's shares against the node's use now
    (entries: view_entries); true for an allocation of whole GPUs."""
    if not a.share_name:
        return True
    book = ShareBook(entries)
    return all(book.available(a.share_name, g, free_gpus) >= k for g, k in zip(a.gpus, a.shares))


# ---- over time: the backfill timeline (profile.py) keeps one use dict per interval ---------------
def apply(use: dict[int, tuple[str, int]], a: NodeAllocation, give: bool) -> None:
    (release if give else hold)(use, a)


def busy(use: dict[int, tuple[str, int]]) -> set[int]:
    """GPUs with shares in use: not free whole, whatever the free-GPU sets say."""
    return set(use)


def window_gpu(name: str, count: int, total: dict[tuple[int, str], int], spans) -> int | None:
    """The GPU that has `count` of `name` free in every one of `spans` ((free whole GPUs, use)
    per interval of a window), by ShareBook.pick's preference at the first; None: none."""
    books = [(ShareBook.of(total, use), free) for free, use in spans]
    if not books or count < 1:
        return None
    first, free0 = books[0]
    fit = [(gpu not in first.use, first.available(name, gpu, free0) - count, gpu)
           for gpu, n in total
           if n == name and min(b.available(name, gpu, free) for b, free in books) >= count]
    return min(fit)[2] if fit else None


def mark(allocation: NodeAllocation, name: str, count: int) -> NodeAllocation:
    """The allocation of a sharing job (its one GPU in gpus) with its shares filled in."""
    if name:
        allocation.shares, allocation.share_name = [count] * len(allocation.gpus), name
    return allocation
