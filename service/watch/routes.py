"""`/v1/cluster`: the Kafka cluster the service watches, for every authenticated caller (the cluster is
the service's own setting, not a tenant's): its measured rates, and its consumer groups as their
coordinators describe them, with lag and rates. 404 when the service watches no cluster."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from stickyd.models.cluster import ClusterGroup, ClusterGroups, ClusterMember, ClusterRates
from stickyd.service.http.auth import current_tenant
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


@cluster.get(
    "/groups",
    response_model=ClusterGroups,
    responses=ERRORS,
    summary="The watched cluster's consumer groups: members, lag and measured rates",
)
async def cluster_groups(request: Request) -> Any:
    watcher = _watcher(request)
    if watcher is None:
        return NOT_WATCHING
    from stickyd.client.cluster_reader import read_cluster

    try:  # the Admin API and the coordinators, off the event loop
        state = await asyncio.to_thread(read_cluster, watcher.settings, (), WATCH_REQUEST_TIMEOUT_S)
    except ImportError:
        return JSONResponse({"detail": "reading groups needs kafka-python: pip install 'stickyd[kafka]'"}, 502)
    except Exception as error:  # noqa: BLE001 - unreachable, refused, a setting it cannot take: a 502 saying which
        return JSONResponse({"detail": f"cannot read {watcher.bootstrap_servers}: {error}"}, status_code=502)
    return ClusterGroups(
        bootstrap_servers=watcher.bootstrap_servers,
        groups=[_group(g, state, watcher.rates) for g in state.groups],
        skipped=state.skipped,
    )


def _group(group: Any, state: Any, rates: LiveRates) -> ClusterGroup:
    topics = sorted({t for m in group.members for t in (*m.subscription, *m.assignment)} & set(state.partitions))
    lag: dict[str, list[int | None]] = {t: [None] * state.partitions[t] for t in topics}
    for o in state.offsets:
        if o.group_id == group.group_id and o.topic in lag and o.partition < len(lag[o.topic]):
            lag[o.topic][o.partition] = None if o.committed is None else max(o.end - o.committed, 0)
    measured = {t: _shown(rates.topics.get(t, ()))[: state.partitions[t]] for t in topics}
    measured = {t: r + [None] * (state.partitions[t] - len(r)) for t, r in measured.items()}
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
        )
        for m in sorted(group.members, key=lambda m: m.member_id)
    ]
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
    )
