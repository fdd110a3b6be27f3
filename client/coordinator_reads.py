"""Member details straight from the group coordinators (kafka-python), which librdkafka's Admin API
does not expose: classic members' subscriptions (DescribeGroups, ConsumerProtocol metadata decoded)
and KIP-848 members' subscriptions, epochs and racks (ConsumerGroupDescribe, API key 69)."""

from __future__ import annotations

from typing import Any

from stickyd.client.cluster_reader import ClusterError, GroupState, MemberState, Partitions


def _messages() -> tuple[Any, Any]:
    """ConsumerGroupDescribe request/response classes from the schema in client/kafka_messages/."""
    global _MESSAGES
    if _MESSAGES is None:
        from kafka.protocol.api_message import ApiMessage

        import stickyd.client.kafka_messages as schemas

        class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas):  # type: ignore[call-arg,misc]
            pass

        class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas):  # type: ignore[call-arg,misc]
            pass

        _MESSAGES = (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse)
    return _MESSAGES


_MESSAGES: tuple[Any, Any] | None = None


def describe_groups(
    config: dict[str, Any], classic: list[str], modern: list[str]
) -> tuple[list[GroupState], list[str]]:
    """(groups described, groups skipped with the reason)."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    if not classic and not modern:
        return [], []
    try:
        admin = KafkaAdminClient(**config)
    except KafkaError as error:
        raise ClusterError(f"cannot reach the group coordinators: {error}") from None
    try:
        groups: list[GroupState] = []
        skipped: list[str] = []
        if classic:
            for group_id, raw in admin.describe_groups(classic).items():
                if raw.get("error"):
                    skipped.append(f"{group_id}: {raw['error']}")
                elif raw.get("protocol_type") not in ("consumer", ""):
                    skipped.append(f"{group_id}: protocol type {raw.get('protocol_type')!r} (not a consumer group)")
                else:
                    groups.append(_classic_group(raw))
        if modern:
            for raw in admin._manager.run(_consumer_group_describe, admin, modern):
                if raw["error_code"]:
                    skipped.append(f"{raw['group_id']}: error {raw['error_code']} {raw.get('error_message') or ''}")
                else:
                    groups.append(_modern_group(raw))
        return groups, skipped
    finally:
        admin.close()


async def _consumer_group_describe(admin: Any, group_ids: list[str]) -> list[dict[str, Any]]:
    request_class, _ = _messages()
    coordinators = await admin._find_coordinator_ids(group_ids)
    by_node: dict[int, list[str]] = {}
    for group_id, node in coordinators.items():
        by_node.setdefault(node, []).append(group_id)
    described: list[dict[str, Any]] = []
    for node, ids in by_node.items():
        response = await admin._manager.send(
            request_class(group_ids=ids, include_authorized_operations=False), node_id=node
        )
        described += response.to_dict()["groups"]
    return described


def _partitions(pairs: list[dict[str, Any]], topic_key: str, parts_key: str) -> Partitions:
    out: Partitions = {}
    for entry in pairs:
        if entry[parts_key]:
            out.setdefault(entry[topic_key], []).extend(entry[parts_key])
    return {t: sorted(p) for t, p in sorted(out.items())}


def _classic_group(raw: dict[str, Any]) -> GroupState:
    members = []
    for m in raw["members"]:
        metadata = m.get("member_metadata") or {}
        assignment = m.get("member_assignment") or {}
        if isinstance(metadata, bytes | bytearray) or isinstance(assignment, bytes | bytearray):
            raise ClusterError(f"{raw['group_id']}: member {m['member_id']}: metadata is not the consumer protocol's")
        members.append(
            MemberState(
                member_id=m["member_id"],
                client_id=m["client_id"],
                host=m["client_host"].lstrip("/"),
                subscription=tuple(sorted(metadata.get("topics") or ())),
                assignment=_partitions(assignment.get("assigned_partitions") or [], "topic", "partitions"),
                generation=metadata.get("generation_id", -1),
                rack=metadata.get("rack_id") or None,
                instance_id=m.get("group_instance_id"),
            )
        )
    return GroupState(raw["group_id"], "classic", raw["group_state"], raw.get("protocol_data") or "", tuple(members))


def _modern_group(raw: dict[str, Any]) -> GroupState:
    members = tuple(
        MemberState(
            member_id=m["member_id"],
            client_id=m["client_id"],
            host=m["client_host"].lstrip("/"),
            subscription=tuple(sorted(m["subscribed_topic_names"] or ())),
            assignment=_partitions(m["assignment"]["topic_partitions"], "topic_name", "partitions"),
            generation=m["member_epoch"],
            rack=m.get("rack_id") or None,
            instance_id=m.get("instance_id"),
            target=_partitions(m["target_assignment"]["topic_partitions"], "topic_name", "partitions"),
        )
        for m in raw["members"]
    )
    group_id, epoch = raw["group_id"], raw["group_epoch"]
    return GroupState(group_id, "consumer", raw["group_state"], raw["assignor_name"], members, epoch)
