"""Which units of a chapter belong together, pure: a chapter's families (ChapterInfo.families) group its pairs, twins
and cases into clusters, and every unit in no family is a cluster of its own. The statistics that respect clustering
(results/clustering.py) take their clusters from here.

A pair family's instances are pairs; their members are cases of the same cluster, and so are a twin family's
members. Where two families share a unit (a case in the instance zero of two pair families), they are one cluster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .schema import ChapterInfo
from .vocabulary import FamilyKind


@dataclass(frozen=True, order=True)
class Cluster:
    """A family (`family` its id) or a lone unit (`family` None, `unit` its id)."""

    family: str | None
    unit: str = ""


def _clusters(groups: Iterable[tuple[str, list[str]]]) -> dict[str, Cluster]:
    """unit -> its cluster, from (family id, its units); families that share a unit are joined under the first."""
    owner: dict[str, str] = {}  # unit -> family
    parent: dict[str, str] = {}  # family -> the family it was joined to

    def root(family: str) -> str:
        while parent[family] != family:
            family = parent[family]
        return family

    for family, units in groups:
        parent.setdefault(family, family)
        for unit in units:
            if unit in owner and root(owner[unit]) != root(family):
                parent[root(family)] = root(owner[unit])
            owner.setdefault(unit, family)
    return {unit: Cluster(root(family)) for unit, family in owner.items()}


def pair_clusters(info: ChapterInfo) -> dict[str, Cluster]:
    """Every pair of the chapter -> its cluster."""
    return _of(info.pairs, _units(info, FamilyKind.PAIR))


def twin_clusters(info: ChapterInfo) -> dict[str, Cluster]:
    """Every twin of the chapter -> its cluster."""
    return _of(info.twins, _units(info, FamilyKind.TWIN))


def case_clusters(info: ChapterInfo) -> dict[str, Cluster]:
    """Every case of the chapter -> its cluster: a pair or twin family's members are cases of its cluster."""
    groups = []
    for family, kind, units in _families(info):
        members = {FamilyKind.PAIR: info.pairs, FamilyKind.TWIN: info.twins}.get(kind)
        groups.append((family, [case for unit in units for case in (members.get(unit, []) if members is not None
                                                                    else [unit])]))
    return _of(info.case_ids, groups)


def clustered(clusters: dict[str, Cluster]) -> bool:
    """Whether some cluster holds more than one unit (else every statistic is the unclustered one)."""
    seen: set[Cluster] = set()
    for cluster in clusters.values():
        if cluster in seen:
            return True
        seen.add(cluster)
    return False


def _families(info: ChapterInfo) -> list[tuple[str, FamilyKind, list[str]]]:
    return [(family, found.kind, [i.unit for i in found.instances]) for family, found in info.families.items()]


def _units(info: ChapterInfo, kind: FamilyKind) -> list[tuple[str, list[str]]]:
    return [(family, units) for family, found_kind, units in _families(info) if found_kind == kind]


def _of(units: Iterable[str], groups: list[tuple[str, list[str]]]) -> dict[str, Cluster]:
    joined = _clusters(groups)
    return {unit: joined.get(unit, Cluster(None, unit)) for unit in units}
