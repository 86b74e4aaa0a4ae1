"""PERSON nodes and how a mailbox is written: shared by the headers block and the
parts of a report that name people (a delivery status's final recipient)."""

from __future__ import annotations

from dataclasses import dataclass, field

from workers_common import IngestionResultBuilder, NodeRef, SpanRef

from .identity import person_node_id
from .model import Mailbox

__all__ = ["People", "render_mailbox"]


@dataclass(slots=True)
class People:
    """PERSON nodes of this submission, one per normalized address."""

    builder: IngestionResultBuilder
    refs: dict[str, NodeRef] = field(default_factory=dict)

    def node(self, address: str, name: str, span: SpanRef) -> NodeRef:
        ref = self.refs.get(address)
        if ref is None:
            properties = {"address": address, **({"name": name} if name else {})}
            ref = self.builder.add_node(
                ["PERSON"], properties, spans=[span], id=person_node_id(address)
            )
            self.refs[address] = ref
        else:
            self.builder.attach_span(ref, span)
        return ref


_SPECIALS = frozenset('()<>@,;:\\".[]')


def render_mailbox(mailbox: Mailbox) -> str:
    """`Name <address>` as RFC 5322 writes it: a name with specials is quoted."""
    if not mailbox.name:
        return mailbox.address
    name = mailbox.name
    if any(ch in _SPECIALS for ch in name):
        name = '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{name} <{mailbox.address}>"
