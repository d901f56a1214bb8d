"""The admission controller both surfaces count against (`sql.admission`): in flight, rate and
seconds per minute, per caller and per deployment, on a clock the test moves."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sql import admission
from sql.admission import Admission, NotAdmitted, Policy


@pytest.fixture
def clock(monkeypatch):
    """The controller's monotonic clock, moved by hand: `clock.now += seconds`."""
    state = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(admission, "time", SimpleNamespace(monotonic=lambda: state.now))
    return state


def refusal(controller: Admission, caller: str | None) -> tuple[str, int]:
    with pytest.raises(NotAdmitted) as refused:
        controller.enter(caller)
    return refused.value.reason, refused.value.retry_after


def test_in_flight_counts_per_caller_and_per_deployment(clock):
    controller = Admission(Policy(caller_in_flight=2, deployment_in_flight=3))
    a1, _a2 = controller.enter("a"), controller.enter("a")
    assert refusal(controller, "a") == ("in_flight", 1)
    controller.enter("b")
    assert refusal(controller, "c") == ("in_flight", 1)   # the deployment is full
    controller.leave(a1)
    controller.enter("c")


def test_work_without_a_caller_counts_against_the_deployment_only(clock):
    controller = Admission(Policy(caller_in_flight=1, deployment_in_flight=2))
    controller.enter(None)
    controller.enter(None)
    assert refusal(controller, None) == ("in_flight", 1)


def test_a_rate_refills_continuously_from_a_burst_of_a_quarter(clock):
    controller = Admission(Policy(deployment_per_minute=8))   # a burst of 2, one more every 7.5 s
    controller.leave(controller.enter("a"))
    controller.leave(controller.enter("b"))
    assert refusal(controller, "a") == ("rate", 8)
    clock.now += 7.5
    controller.enter("a")
    assert refusal(controller, "a") == ("rate", 8)


def test_a_refusal_counts_against_nothing(clock):
    controller = Admission(Policy(caller_per_minute=4, deployment_in_flight=1))   # burst 1
    held = controller.enter("a")
    assert refusal(controller, "a") == ("in_flight", 1)   # checked first: the bucket is not touched
    controller.leave(held)
    clock.now += 15
    controller.enter("a")


def test_seconds_are_counted_when_work_ends_and_leave_the_minute(clock):
    controller = Admission(Policy(caller_seconds=1.0))
    ticket = controller.enter("a")
    assert controller.enter("a")   # running work is not counted yet
    clock.now += 1.5
    controller.leave(ticket)
    assert refusal(controller, "a") == ("seconds", 60)
    controller.enter("b")   # another caller's budget is its own
    clock.now += 59.5
    assert refusal(controller, "a") == ("seconds", 1)
    clock.now += 1
    controller.enter("a")


def test_limits_that_are_not_positive_are_off(clock):
    controller = Admission(Policy())
    for _ in range(100):
        controller.enter("a")


def test_a_new_caller_is_admitted_at_a_rate_whose_burst_is_one(clock):
    controller = Admission(Policy(caller_per_minute=4))   # a burst of 1, one more every 15 s
    controller.leave(controller.enter("a"))
    assert refusal(controller, "a") == ("rate", 15)
    controller.enter("b")


def test_a_bucket_of_one_at_sixty_a_minute_admits_one_a_second(clock):
    controller = Admission(Policy(deployment_per_minute=60, burst=1))   # the cost export's rate
    controller.leave(controller.enter(None))
    clock.now += 0.5
    assert refusal(controller, None) == ("rate", 1)
    clock.now += 0.5
    controller.leave(controller.enter(None))
    assert refusal(controller, None) == ("rate", 1)
