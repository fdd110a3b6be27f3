"""`/v1/cluster`: the Kafka cluster the service watches, for every authenticated caller (the cluster is
the service's own setting, not a tenant's): its measured rates, and its consumer groups as their
coordinators describe them, with lag, rates, their busiest member and stickyd's answers beside it
(service/watch/compare.py). 404 when the service watches no cluster."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from stickyd.models.cluster import ClusterComparison, ClusterGroup, ClusterGroups, ClusterMember, ClusterRates
from stickyd.service.http.auth import current_tenant
from stickyd.service.watch.compare import Comparisons, bottleneck, compare, live_weights, member_figures
from stickyd.service.watch.rates import UNMEASURED, LiveRates
from stickyd.service.watch.watcher import Watcher
from stickyd.solvers.time_policy import WATCH_REQUEST_TIMEOUT_S

cluster = APIRouter(prefix="/v1/cluster", tags=["cluster"], dependencies=[Depends(current_tenant)])

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "authentication is on and the request has no live bearer token"},
    404: {"description": "the service watches no Kafka cluster (STICKYD_WATCH_BOOTSTRAP_SERVERS is unset)"},
    502: {"description": "the watched cluster could not be read; `detail` says why"},
}
NOT_WATCHING = JSONResponse(
    {"detail": "this service watches no Kafka cluster (STICKYD_WATCH_BOOTSTRAP_SERVERS is unset)"}, status_code=404
)


def _watcher(request: Request) -> Watcher | None:
    watcher: Watcher | None = request.app.state.services.watcher
    return watcher


def _shown(rates: tuple[int, ...]) -> list[int | None]:
    return [None if r == UNMEASURED else r for r in rates]


@cluster.get("/rates", response_model=ClusterRates, responses=ERRORS, summary="The watched cluster's produce rates")
async def cluster_rates(request: Request) -> Any:
    watcher = _watcher(request)
    if watcher is None:
        return NOT_WATCHING
    rates = watcher.rates
    return ClusterRates(
        bootstrap_servers=watcher.bootstrap_servers,
        sampled_at=rates.sampled_at,
        window_s=rates.window_s,
        topics={t: _shown(r) for t, r in rates.topics.items()},
        topic_ids=rates.ids,
    )


_COMPARISONS: weakref.WeakKeyDictionary[Watcher, Comparisons] = weakref.WeakKeyDictionary()


async def _read(watcher: Watcher, groups: tuple[str, ...]) -> Any:
    """The cluster's state, or the JSONResponse that says why it cannot be read."""
    from stickyd.client.cluster_reader import read_cluster

    try:  # the Admin API and the coordinators, off the event loop
        return await asyncio.to_thread(read_cluster, watcher.settings, groups, WATCH_REQUEST_TIMEOUT_S)
    except ImportError:
        return JSONResponse({"detail": "reading groups needs kafka-python: pip install 'stickyd[kafka]'"}, 502)
    except Exception as error:  # noqa: BLE001 - unreachable, refused, a setting it cannot take: a 502 saying which
        return JSONResponse({"detail": f"cannot read {watcher.bootstrap_servers}: {error}"}, status_code=502)


async def _groups(request: Request, watcher: Watcher, state: Any) -> list[ClusterGroup]:
    rates = watcher.rates
    weights = await asyncio.to_thread(live_weights, rates, state.partitions)
    cache = _COMPARISONS.setdefault(watcher, Comparisons())
    services = request.app.state.services
    slots = asyncio.Semaphore(max(1, services.solvers.size))
    compared = await asyncio.gather(
        *(compare(services, cache, g, weights, rates.sampled_at, slots) for g in state.groups)
    )
    return await asyncio.to_thread(
        lambda: [_group(g, state, rates, weights, c) for g, c in zip(state.groups, compared, strict=True)]
    )


@cluster.get(
    "/groups",
    response_model=ClusterGroups,
    responses=ERRORS,
    summary="The watched cluster's consumer groups: members, lag, measured rates and stickyd's answers beside them",
)
async def cluster_groups(request: Request) -> Any:
    watcher = _watcher(request)
    if watcher is None:
        return NOT_WATCHING
    state = await _read(watcher, ())
    if isinstance(state, JSONResponse):
        return state
    groups = await _groups(request, watcher, state)
    _COMPARISONS[watcher].forget_except({g.group_id for g in groups})
    return ClusterGroups(bootstrap_servers=watcher.bootstrap_servers, groups=groups, skipped=state.skipped)


GROUP_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    404: {"description": "the service watches no Kafka cluster, or the cluster has no such group with members"},
}


@cluster.get(
    "/groups/{group_id}",
    response_model=ClusterGroup,
    responses=GROUP_ERRORS,
    summary="One consumer group of the watched cluster: its members, their loads and stickyd's answers",
)
async def cluster_group(request: Request, group_id: str) -> Any:
    watcher = _watcher(request)
    if watcher is None:
        return NOT_WATCHING
    state = await _read(watcher, (group_id,))
    if isinstance(state, JSONResponse):
        return state
    groups = await _groups(request, watcher, state)
    if not groups:
        why = "; ".join(state.skipped) or f"{group_id}: no such group"
        return JSONResponse({"detail": f"group_id: {why}"}, status_code=404)
    return groups[0]


def _group(
    group: Any, state: Any, rates: LiveRates, weights: dict[str, list[int]], stickyd: ClusterComparison
) -> ClusterGroup:
    topics = sorted({t for m in group.members for t in (*m.subscription, *m.assignment)} & set(state.partitions))
    lag: dict[str, list[int | None]] = {t: [None] * state.partitions[t] for t in topics}
    for o in state.offsets:
        if o.group_id == group.group_id and o.topic in lag and o.partition < len(lag[o.topic]):
            lag[o.topic][o.partition] = None if o.committed is None else max(o.end - o.committed, 0)
    measured = {t: _shown(rates.topics.get(t, ()))[: state.partitions[t]] for t in topics}
    measured = {t: r + [None] * (state.partitions[t] - len(r)) for t, r in measured.items()}
    figures = {m.member_id: member_figures(m.assignment, weights) for m in group.members}
    members = [
        ClusterMember(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.host,
            subscription=list(m.subscription),
            assignment=m.assignment,
            target=m.target,
            generation=m.generation,
            rack=m.rack,
            instance_id=m.instance_id,
            partitions=figures[m.member_id].count,
            load=figures[m.member_id].load,
        )
        for m in sorted(group.members, key=lambda m: m.member_id)
    ]
    generations = [m.generation for m in group.members if m.generation is not None and m.generation >= 0]
    return ClusterGroup(
        group_id=group.group_id,
        protocol=group.protocol,
        state=group.state,
        assignor=group.assignor,
        epoch=group.epoch,
        members=members,
        lag=lag,
        total_lag=sum(x for per in lag.values() for x in per if x is not None),
        rates=measured,
        total_rate=sum(x for per in measured.values() for x in per if x is not None),
        kind=group.protocol,
        generation=group.epoch if group.epoch is not None else max(generations, default=None),
        bottleneck=bottleneck(list(figures.values())),
        stickyd=stickyd,
    )
