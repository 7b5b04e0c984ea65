"""Queue lookahead: the prefixes of the requests waiting to be admitted.

A serving engine knows its waiting queue: every queued prompt has arrived, so its prefixes
are known before the request runs (SGLang's longest-prefix-match schedule reads the same
thing). When the queue is long, the states a queued request will resume from are known
too, and so is which one is needed soonest: the queue is Belady's future, as far as it
reaches. Two policies read it:

* `QueueBranchAdmission` (`queue-branch`): ghost-branch, plus a tracked point at the
  deepest grid point of the prompt that some queued prompt shares (where that request will
  branch from this one).
* `QueueAware` (`queue-aware`): a state no queued request will resume from goes first (in
  the base order: `build_policies` gives it FLOP-aware, the best online order where no
  queue is known); then the needed states by value, least first. A queued request resumes
  from the deepest cached state on its path, so a state whose every queued user passes a
  deeper cached state (on either tier) is *shadowed*: it counts as unused.

A needed state's value is what its first waiting user loses without it, per wait::

    value = saved / (1 + distance) ** DISTANCE_POWER

    saved     the state's depth less its deepest stateful ancestor's (tree units): the
              user would resume from that ancestor instead
    distance  queue places from the head to that user (admissions still to come first)

With power 1 this is Belady's rule for weighted items (value per slot-time held); with
power 0, saved pages alone. A larger power favours the next users; the power is measured,
not derived. With `queue-branch` on one GLM-5.3-Flash rank (60 GiB, fp8 KV, device only),
as fractions of each replay's serving bound on the shared synthetic trace and Mooncake's
conversation trace: power 1 gives 0.793 and 0.845; 1.5, 0.801 and 0.827; 1.75, 0.807 and
0.814; 2, 0.812 and 0.806; 3, 0.825 and 0.768. 1.75 keeps both above 80 %. The order
before values (latest first user first) reached 0.758 and 0.679.

With an empty queue both are their base policy. They pay where the queue is long (a rank
that does not keep up); where one rank keeps up the queue holds little of the future.

Assumptions: a request's prefixes are named as the other ghost policies name them
(`ghost.prefix_hashes` per page); a request joins when it arrives and leaves when it is
admitted (any order; the first joined request with the same prompt leaves).

>>> from kvledger.cache.policies.ghost import prefix_hashes
>>> ahead = QueueLookahead()
>>> a, b = prefix_hashes(np.array([1, 2, 3])), prefix_hashes(np.array([1, 2, 4]))
>>> ahead.join(a); ahead.join(b)
>>> ahead.first_user(int(a[1])), ahead.users(int(a[1])), ahead.first_user(int(b[2]))
(0, 2, 1)
>>> ahead.deepest_shared(prefix_hashes(np.array([1, 2, 9])))   # pages shared with the queue
2
>>> ahead.leave(a), ahead.users(int(a[1])), len(ahead)
(True, 1, 1)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import numpy as np

from kvledger.cache.policies.admission import CheckpointEvent, GhostBranchAdmission, Ticket
from kvledger.cache.policies.eviction import LruEviction, NodeHashes
from kvledger.tree.lru import LruList
from kvledger.tree.node import Node, Tier

# descendants a shadow check walks before it gives up and calls the state needed (a junction)
SHADOW_WALK = 64
# queued users of a prefix a first-unshadowed-user search reads before it settles
USER_SCAN = 64
# how fast a needed state's value falls with its user's queue distance (see the module)
DISTANCE_POWER = 1.75


class QueueLookahead:
    """A multiset of the page-prefix hashes of the waiting requests, with queue positions
    (join numbers, increasing): per prefix, the waiting requests that pass it, oldest first."""

    def __init__(self) -> None:
        self._users: dict[int, deque[int]] = {}  # prefix hash → join numbers, ascending
        self._queue: deque[tuple[int, np.ndarray]] = deque()  # (join number, hashes)
        self.joined = 0

    def __len__(self) -> int:
        return len(self._queue)

    def join(self, hashes: np.ndarray) -> None:
        """A request with these prefix hashes (its matchable pages) joined the queue."""
        number = self.joined
        self.joined += 1
        self._queue.append((number, hashes))
        users = self._users
        for h in hashes.tolist():
            q = users.get(h)
            if q is None:
                users[h] = deque((number,))
            else:
                q.append(number)

    def leave(self, hashes: np.ndarray) -> bool:
        """The oldest queued request with this prompt was admitted; False if none is queued
        (a driver that never announced it)."""
        if not len(hashes):
            return False
        at = next((i for i, (_, queued) in enumerate(self._queue)
                   if len(queued) == len(hashes) and queued[-1] == hashes[-1]), None)
        if at is None:
            return False
        number, queued = self._queue[at]
        del self._queue[at]
        users = self._users
        for h in queued.tolist():
            q = users[h]
            if q[0] == number:
                q.popleft()
            else:
                q.remove(number)
            if not q:
                del users[h]
        return True

    def users(self, prefix_hash: int) -> int:
        q = self._users.get(prefix_hash)
        return 0 if q is None else len(q)

    def head(self) -> int | None:
        """The join number of the oldest queued request (None: the queue is empty)."""
        return self._queue[0][0] if self._queue else None

    def first_user(self, prefix_hash: int) -> int | None:
        q = self._users.get(prefix_hash)
        return None if q is None else q[0]

    def users_of(self, prefix_hash: int) -> deque[int]:
        return self._users.get(prefix_hash, deque())

    def deepest_shared(self, hashes: np.ndarray) -> int:
        """How many of `hashes` (a prompt's prefixes, shallow first) lead to the deepest one
        a queued request passes too (0: none)."""
        users = self._users
        found = hashes.tolist()
        for i in range(len(found) - 1, -1, -1):
            if found[i] in users:
                return i + 1
        return 0

    def check_integrity(self) -> None:
        """Each queued request is counted once under each of its prefixes, and nothing else."""
        counted = sum(len(q) for q in self._users.values())
        expected = sum(len(h) for _, h in self._queue)
        if counted != expected:
            raise RuntimeError(f"lookahead counts {counted} queued prefixes, the queue {expected}")
        for h, q in self._users.items():
            if not q or any(q[i] >= q[i + 1] for i in range(len(q) - 1)):
                raise RuntimeError(f"lookahead users of prefix {h:#x} not ascending: {list(q)}")


class QueueAware(LruEviction):
    """Unused (and shadowed) states first in `base`'s order, then the needed ones by value
    (see the module), least first."""

    needs_hashes = True

    def __init__(self, base: LruEviction, lookahead: QueueLookahead, *,
                 name: str = "queue-aware") -> None:
        self.base, self.lookahead, self.name = base, lookahead, name
        self._hash = NodeHashes()
        self.queue_picks = 0  # victims a queued request was waiting for (Belady's order)

    def next_use(self, node: Node) -> int | None:
        """Join number of the first queued request that would resume from `node`'s state
        (no deeper cached state on its path); None: none would."""
        users = self.lookahead.users_of(self._hash(node))
        if not users:
            return None
        deeper = self._deeper_states(node)
        if deeper is None:  # too many below to read: a junction, needed
            return users[0]
        shadowed: set[int] = set()
        for d in deeper:
            shadowed.update(self.lookahead.users_of(self._hash(d)))
        if len(shadowed) >= len(users):
            return None
        for i, number in enumerate(users):
            if number not in shadowed or i >= USER_SCAN:
                return number
        return None

    @staticmethod
    def _deeper_states(node: Node) -> list[Node] | None:
        """The shallowest stateful nodes strictly below `node` (either tier)."""
        found: list[Node] = []
        stack = list(node.children.values())
        walked = 0
        while stack:
            walked += 1
            if walked > SHADOW_WALK:
                return None
            child = stack.pop()
            if any(v is not None for v in child.mamba.values):
                found.append(child)
            else:
                stack.extend(child.children.values())
        return found

    def pick(self, tier: Tier, states: LruList, count: int,
             eligible: Callable[[Node], bool]) -> list[Node]:
        if count <= 0:
            return []
        if not len(self.lookahead):
            return self.base.pick(tier, states, count, eligible)
        wanted: dict[Node, int] = {}
        for node in states:
            if eligible(node) and (use := self.next_use(node)) is not None:
                wanted[node] = use
        picked = self.base.pick(tier, states, count,
                                lambda node: node not in wanted and eligible(node))
        if len(picked) < count:
            head = self.lookahead.head() or 0
            value = {node: self.value(node, use - head) for node, use in wanted.items()}
            least = sorted(wanted, key=value.__getitem__)[: count - len(picked)]
            self.queue_picks += len(least)
            picked += least
        return picked

    @staticmethod
    def value(node: Node, distance: int) -> float:
        """What losing `node`'s state costs a user `distance` queue places on, per wait:
        the tree units from its deepest stateful ancestor (or the root) down to its end."""
        saved = node.num_tokens
        above = node.parent
        while above is not None and above.parent is not None \
                and all(v is None for v in above.mamba.values):
            saved += above.num_tokens
            above = above.parent
        return saved / (1 + distance) ** DISTANCE_POWER

    def observe(self, hashes: np.ndarray | None, prompt_pages: int, usable_pages: int) -> None:
        self.base.observe(hashes, prompt_pages, usable_pages)

    def check_integrity(self) -> None:
        self.lookahead.check_integrity()
        self.base.check_integrity()


class QueueBranchAdmission(GhostBranchAdmission):
    """Ghost-branch plus the branch point a queued request will take (see the module)."""

    name = "queue-branch"

    def __init__(self, capacity: int, lookahead: QueueLookahead) -> None:
        super().__init__(capacity)
        self.lookahead = lookahead
        self.queue_points = 0  # tickets given a point from the queue

    def ticket(self, *, keys: np.ndarray, prompt_pages: int, usable_pages: int,
               tree_branch_pages: int | None, grid_pages: int,
               hashes: np.ndarray | None = None) -> Ticket:
        t = super().ticket(keys=keys, prompt_pages=prompt_pages, usable_pages=usable_pages,
                           tree_branch_pages=tree_branch_pages, grid_pages=grid_pages,
                           hashes=hashes)
        if not len(self.lookahead) or t.hashes is None:
            return t
        grid_points = t.hashes[grid_pages - 1:prompt_pages:grid_pages]
        ahead = self.lookahead.deepest_shared(grid_points) * grid_pages
        if ahead <= usable_pages or ahead == t.branch_pages:
            return t
        self.queue_points += 1
        if t.branch_pages is None or t.branch_pages <= usable_pages:
            t.branch_pages = ahead
        else:
            t.then_pages = ahead
        return t

    def admit(self, event: CheckpointEvent, ticket: Ticket, pages: int) -> bool:
        if event is not CheckpointEvent.FINISH and pages == ticket.then_pages:
            return True
        return super().admit(event, ticket, pages)
