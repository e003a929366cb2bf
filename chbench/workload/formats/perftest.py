"""ClickHouse's performance tests (``tests/performance/*.xml`` in its repository): one
file is one test, read here as one :class:`~chbench.workload.model.Group`.

The format as ClickHouse's runner (``tests/performance/scripts/perf.py``) reads it:

* root ``<test>``, attribute ``max_ignored_relative_change`` (default 0.05);
* ``<settings>``: each child element a setting for every statement of the test
  (``file="x.json"``: ``{"settings": {…}}`` first, the inline ones over them);
* ``<substitutions>``: ``<substitution>`` with ``<name>`` and ``<values><value>…``; each
  template expands to the cartesian product of the substitutions it names, keys in sorted
  order (``string.Formatter`` syntax: ``{{``/``}}`` are literal braces);
* ``<create_query>``/``<fill_query>`` in document order before the queries,
  ``<drop_query>`` before (errors ignored) and after;
* ``<query>`` (``file="…"``: its SQL read from that file, relative to the test; CREATE and
  ALTER statements there join the set-up, DROP and TRUNCATE the tear-down) — named
  ``test_name.queryN`` in document order, N counting expanded queries;
* ``<tags><tag>long</tag></tags>``: skipped unless asked;
* ``<preconditions><table_exists>``: the test is skipped where the table is missing;
  other legacy elements (``short=``, ``<type>``, ``<stop_conditions>``, ``<main_metric>``,
  ``<metrics>``) are ignored.

``--tests PATH…`` reads many files (``read_tests``); a file that cannot be read becomes a
group carrying its error, so the other tests still run.
"""

from __future__ import annotations

import glob
import itertools
import json
import os
import random
import re
import string
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from chbench.errors import UsageError
from chbench.files import read_user_file, read_user_text
from chbench.workload.model import Group, Query, Statement, Workload
from chbench.workload.sql import created_objects, scan, tables_named

DEFAULT_THRESHOLD = 0.05  # perf.py: ignored_relative_change when the attribute is absent
STATEMENTS = ("create_query", "fill_query", "drop_query", "query")


@dataclass(frozen=True)
class PerfTestOptions:
    """Which tests and queries run (``--tests-filter``, ``--long``, ``--max-queries``, ``--seed``)."""

    filter: str | None = None
    long: bool = False
    max_queries: int | None = None
    seed: int = 0


def looks_like_perftest(path: str, text: str) -> bool:
    head = text.lstrip()[:200]
    return head.startswith("<test") or (head.startswith("<?xml") and "<test" in text[:2000])


def name_of_test(source: str) -> str:
    """The test's name: its file name without ``.xml`` (as ClickHouse names it)."""
    return Path(source).stem if source not in ("", "standard input") else "test"


class _Reader:
    """One file's elements, with errors that name the file and the element."""

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.name = name_of_test(source)
        try:
            self.root = ET.fromstring(text)
        except ET.ParseError as e:
            raise UsageError(f"{source}: malformed XML: {e}") from None
        if self.root.tag != "test":
            raise UsageError(f"{source}: the root element is <{self.root.tag}>, a performance test's is <test>")
        self.values = self._substitutions()

    def fail(self, where: str, why: str) -> UsageError:
        return UsageError(f"{self.source}: {where}: {why}")

    def _substitutions(self) -> dict[str, list[str]]:
        values: dict[str, list[str]] = {}
        for i, e in enumerate(self.root.findall("substitutions/substitution"), 1):
            name = (e.findtext("name") or "").strip()
            if not name:
                raise self.fail(f"<substitution> #{i}", "no <name>")
            vals = [v.text or "" for v in e.findall("values/value")]
            if not vals:
                loose = " (its <value>s must be inside <values>)" if e.find("value") is not None else ""
                raise self.fail(f"<substitution> {name}", f"no <value> in its <values> (a test needs at least "
                                                          f"one){loose}")
            values[name] = vals
        return values

    def settings(self) -> dict[str, str]:
        """``<settings file="x.json">`` ({"settings": {…}}, relative to the test), then the
        inline ones over them."""
        out: dict[str, str] = {}
        elem = self.root.find("settings")
        if elem is not None and "file" in elem.attrib:
            where = f"<settings file={elem.attrib['file']!r}>"
            try:
                raw = read_user_file(str(Path(self.source).parent / elem.attrib["file"]), "settings file")
                out = {str(k): str(v) for k, v in json.loads(raw)["settings"].items()}
            except UsageError as e:
                raise self.fail(where, str(e)) from None
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise self.fail(where, f'not a JSON object {{"settings": {{…}}}} ({e})') from None
        out.update({e.tag: (e.text or "").strip() for e in self.root.findall("settings/*")})
        return out

    def threshold(self) -> float:
        raw = self.root.attrib.get("max_ignored_relative_change")
        if raw is None:
            return DEFAULT_THRESHOLD
        try:
            value = float(raw)
        except ValueError:
            raise self.fail("<test max_ignored_relative_change>", f"not a number: {raw!r}") from None
        if not 0 <= value < 10:
            raise self.fail("<test max_ignored_relative_change>", f"{raw} is out of range (0 ≤ x < 10)")
        return value

    def template(self, e: ET.Element, where: str) -> str:
        path = e.attrib.get("file")
        if path is None:
            return e.text or ""
        full = Path(self.source).parent / path
        try:
            return read_user_text(str(full), "query file")
        except UsageError as err:  # read_user_text says "not a UTF-8 text file" itself
            raise self.fail(f"{where} file={path!r}", str(err)) from None

    def expand(self, template: str, where: str) -> list[str]:
        """The template with every combination of the substitutions it names."""
        try:
            keys = sorted({f for _, f, _, _ in string.Formatter().parse(template) if f is not None})
        except ValueError as e:  # a lone { or }
            raise self.fail(where, f"{e} (write {{{{ and }}}} for literal braces)") from None
        for k in keys:
            if k not in self.values:
                known = ", ".join(sorted(self.values)) or "none"
                raise self.fail(where, f"uses {{{k}}}, but no <substitution> is named {k!r} (known: {known})")
        out = []
        for combo in itertools.product(*(self.values[k] for k in keys)):
            try:
                out.append(template.format(**dict(zip(keys, combo, strict=True))))
            except (ValueError, KeyError, IndexError, AttributeError) as e:
                raise self.fail(where, f"cannot substitute: {e}") from None
        if not "".join(out).strip():
            raise self.fail(where, "empty statement")
        return out


def _statement(sql: str) -> str:
    """As sent: without surrounding blanks and a trailing ``;``."""
    return sql.strip().rstrip(";").rstrip()


def _split_file(r: _Reader, text: str, where: str) -> tuple[list[str], list[str], list[str]]:
    """A query file of several statements, as ClickHouse's runner splits it: CREATE and
    ALTER join the set-up, DROP and TRUNCATE the tear-down, the rest is the timed query
    (several timed statements, which its runner times together, are refused)."""
    try:
        masked, semis = scan(text, keep_strings=True)
    except UsageError as e:
        raise r.fail(where, str(e)) from None
    bounds = [-1, *semis, len(text)]
    create: list[str] = []
    drop: list[str] = []
    timed: list[str] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        body = "".join(masked[a + 1:b]).strip()
        if not body:
            continue
        stmt = text[a + 1:b].strip()
        word = body.split(None, 1)[0].split("(", 1)[0].upper()
        (create if word in ("CREATE", "ALTER") else drop if word in ("DROP", "TRUNCATE") else timed).append(stmt)
    if len(timed) != 1:
        raise r.fail(where, f"{len(timed)} timed statements in the file (chbench times one per query)")
    return create, drop, timed


def parse_perftest(text: str, source: str = "performance test") -> Workload:
    """One performance test as a workload of one group."""
    r = _Reader(text, source)
    group = Group(name=r.name, source=source, threshold=r.threshold(), settings=r.settings(),
                  requires=[(e.text or "").strip() for e in r.root.findall("preconditions/table_exists")
                            if (e.text or "").strip()],
                  tags=[(e.text or "").strip() for e in r.root.findall(".//tags/tag")])
    queries: list[Query] = []
    counts = {tag: 0 for tag in STATEMENTS}
    extra: list[tuple[str, str, str]] = []  # (tag, template, where) from multi-statement query files
    for e in r.root:
        if e.tag not in STATEMENTS:
            continue  # <settings>, <substitutions>, <tags>, <preconditions> above; legacy elements ignored
        counts[e.tag] += 1
        where = f"<{e.tag}> #{counts[e.tag]}"
        templates = [r.template(e, where)]
        if e.tag == "query" and "file" in e.attrib:
            create, drop, templates = _split_file(r, templates[0], where)
            extra += [("create_query", t, where) for t in create] + [("drop_query", t, where) for t in drop]
        for sql in (_statement(x) for t in templates for x in r.expand(t, where)):
            if e.tag == "query":
                queries.append(Query(name=f"{r.name}.query{len(queries)}", sql=sql, group=r.name))
            else:
                _add(group, e.tag, sql, where)
    for tag, template, where in extra:  # after the test's own, as ClickHouse's runner adds them
        for sql in r.expand(template, where):
            _add(group, tag, _statement(sql), where)
    if not queries:
        raise r.fail("<test>", "no <query> element")
    _find_tables(group, queries)
    group.queries = [q.name for q in queries]
    group.expanded = len(queries)
    return Workload(queries=queries, source=source, groups=[group])


def _add(group: Group, tag: str, sql: str, where: str) -> None:
    if tag == "drop_query":
        group.cleanup.append(Statement(sql, where))
        group.teardown.append(Statement(sql, where))
    else:
        group.setup.append(Statement(sql, where))


def _find_tables(group: Group, queries: list[Query]) -> None:
    """Tables the test reads but does not create: its set-up's go to the group (missing,
    the test is skipped), each query's to the query (missing, the query is skipped)."""
    created: set[str] = set()
    databases: set[str] = set()
    for st in group.setup:
        obj = created_objects(st.sql)
        if obj is None:
            continue
        if obj[0] == "database":
            databases.add(obj[1])
        else:
            created.add(obj[1])

    def bare(name: str) -> str:
        return name.split(".")[-1].strip("`\"")

    made = {bare(c) for c in created}

    def foreign(sql: str) -> list[str]:
        return [t for t in tables_named(sql)
                if bare(t) not in made and not ("." in t and t.split(".", 1)[0] in databases)]

    for st in group.setup:
        group.tables += [t for t in foreign(st.sql) if t not in group.tables]
    for q in queries:
        q.tables = [t for t in foreign(q.sql) if t not in group.tables]


# -- many files: --tests PATH… ----------------------------------------------------------
def expand_test_paths(paths: list[str]) -> list[str]:
    """Files, directories (their ``*.xml``) and glob patterns, each in sorted order."""
    out: list[str] = []
    for p in paths:
        if any(c in p for c in "*?["):
            found = sorted(glob.glob(p, recursive=True))
            if not found:
                raise UsageError(f"--tests {p}: no file matches")
        elif os.path.isdir(p):
            found = sorted(str(f) for f in Path(p).glob("*.xml"))
            if not found:
                raise UsageError(f"--tests {p}: no *.xml file in this directory")
        elif os.path.exists(p):
            found = [p]
        else:
            raise UsageError(f"--tests {p}: no such file or directory")
        out += [f for f in found if f not in out]
    return out


def read_tests(paths: list[str], name_filter: str | None = None) -> Workload:
    """Every test file whose name matches (others are not read) as one workload; a file
    that cannot be read becomes a group with its error (the run reports it and goes on).
    ``select_tests`` applies the other options."""
    wl = Workload(queries=[], source=" ".join(paths))
    pattern = _filter(name_filter)
    for path in expand_test_paths(paths):
        name = name_of_test(path)
        if pattern is not None and not pattern.search(name):
            continue
        try:
            part = parse_perftest(read_user_text(path, "test file"), path)
        except UsageError as e:
            part, msg = None, str(e)
        if part is None:
            wl.groups.append(Group(name=name, source=path, error=msg))
            continue
        if any(g.name == name for g in wl.groups):
            raise UsageError(f"{path}: a second test named {name!r} (test names come from file names)")
        wl.queries += part.queries
        wl.groups += part.groups
    if not wl.groups:
        raise UsageError(f"--tests-filter {name_filter!r}: no test name matches")
    if all(g.error for g in wl.groups):
        more = f" (and {len(wl.groups) - 1} more test files that cannot be read)" if len(wl.groups) > 1 else ""
        raise UsageError(f"{wl.groups[0].error}{more}")
    return wl


def _filter(regex: str | None) -> re.Pattern[str] | None:
    if regex is None:
        return None
    try:
        return re.compile(regex)
    except re.error as e:
        raise UsageError(f"--tests-filter {regex!r}: not a regular expression ({e})") from None


def select_tests(wl: Workload, opts: PerfTestOptions) -> Workload:
    """Apply the options: tests not matching the filter dropped; ``long`` tests kept but
    marked skipped unless asked; at most ``max_queries`` queries per test, chosen at
    random with the seed (in document order; the rest listed as not chosen)."""
    pattern = _filter(opts.filter)
    keep = [g for g in wl.groups if pattern is None or pattern.search(g.name)]
    if not keep:
        raise UsageError(f"--tests-filter {opts.filter!r}: no test name matches")
    dropped: set[str] = set()
    for g in wl.groups:
        if g not in keep:
            dropped.update(g.queries)
    for g in keep:
        if "long" in g.tags and not opts.long and g.error is None:
            g.skip = "tagged long (--long runs it)"
        if opts.max_queries is not None and len(g.queries) > opts.max_queries:
            rng = random.Random(f"{opts.seed}:{g.name}")
            chosen = set(rng.sample(range(len(g.queries)), opts.max_queries))
            g.not_chosen = [n for i, n in enumerate(g.queries) if i not in chosen]
            dropped.update(g.not_chosen)
            g.queries = [n for i, n in enumerate(g.queries) if i in chosen]
    wl.groups = keep
    wl.queries = [q for q in wl.queries if q.name not in dropped]
    return wl
