"""Advance reservations: create, delete, list — `scontrol create|delete|show reservation`.

A reservation sets nodes aside for some users or accounts over [StartTime, EndTime). The
scheduler keeps other jobs off those nodes for that window (sched/cycle.py: a job may use a
reserved node only if it ends before the window opens); jobs submitted with --reservation run
only there, once it has begun. Every change is committed before it takes effect. Operators only.
"""

from __future__ import annotations

from ..errors import InvalidRequest, NotFound
from ..model import JobState, Reservation
from .auth import require
from .job_mgr import Caller
from .state import ClusterState


class ReservationManager:
    def __init__(self, state: ClusterState):
        self.s = state

    def create(self, resv: Reservation, node_count: int, partition: str, caller: Caller) -> str:
        require("reservation", caller)
        if resv.end_time <= resv.start_time:
            raise InvalidRequest("Error creating the reservation: Invalid time specification "
                                 "(EndTime must follow StartTime)")
        if not resv.users and not resv.accounts:
            raise InvalidRequest("Error creating the reservation: Users or Accounts must be given")
        with self.s.lock:
            if not resv.name:
                resv.name = self._free_name(resv)
            if resv.nodes:
                unknown = [n for n in resv.nodes if n not in self.s.nodes]
                if unknown:
                    raise InvalidRequest(f"Error creating the reservation: Invalid node name "
                                         f"specified ({unknown[0]})")
            else:
                resv.nodes = self._pick_nodes(resv, node_count, partition)
            self.s.store.save_reservation(resv)  # StaleState when the name exists
            self.s.reservations[resv.name] = resv
        self.s.changed.set()
        return resv.name

    def _free_name(self, resv: Reservation) -> str:
        base = (resv.users or resv.accounts)[0]
        n = 1
        while f"{base}_{n}" in self.s.reservations:
            n += 1
        return f"{base}_{n}"

    def _pick_nodes(self, resv: Reservation, count: int, partition: str) -> list[str]:
        """NodeCnt=N: the first N nodes (by name) of the partition not already reserved in
        that window."""
        if count < 1:
            raise InvalidRequest("Error creating the reservation: Nodes or NodeCnt must be given")
        if partition and partition not in self.s.cfg.partitions:
            raise NotFound("Error creating the reservation: Invalid partition name specified")
        pool = self.s.cfg.partitions[partition].nodes if partition else list(self.s.nodes)
        taken = {n for r in self.s.reservations.values()
                 if r.start_time < resv.end_time and resv.start_time < r.end_time for n in r.nodes}
        free = sorted(n for n in pool if n not in taken)
        if len(free) < count:
            raise InvalidRequest("Error creating the reservation: Requested nodes are busy")
        return free[:count]

    def delete(self, name: str, caller: Caller) -> None:
        require("reservation", caller)
        with self.s.lock:
            if name not in self.s.reservations:
                raise NotFound(f"Reservation {name} not found")
            if any(j.spec.reservation == name and j.state == JobState.RUNNING
                   for j in self.s.jobs.values()):
                raise InvalidRequest(f"Reservation {name} is in use by running jobs")
            self.s.store.delete_reservation(name)
            del self.s.reservations[name]
        self.s.changed.set()

    def list(self) -> list[Reservation]:
        now = self.s.clock()
        with self.s.lock:
            return sorted((r for r in self.s.reservations.values() if r.end_time > now),
                          key=lambda r: (r.start_time, r.name))
