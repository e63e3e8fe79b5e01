# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The documentation against the code: no httpd needed.

README.md is the entry point; the manual is docs/, one subject a page.

(a) Directives: every directive of the module's command_rec table has a
    row in docs/directives.md's table and a <directivesynopsis> in
    docs/mod_proxy_beacon.xml, and neither documents a directive the
    module does not have. The XML's syntax, default and contexts agree
    with the page's row and the command_rec entry.
(b) Log lines: every message the module tags with BCNLOGNO(nnnnn) in
    src/*.c, and every drop reason of lib/beacon_wire.c except "ok", is
    named in docs/troubleshooting.md's "Log messages". The fragment looked
    for is the message's leading literal text (see message_fragments()).
(c) Tags: every BCN tag is used at exactly one call site, every log call
    at DEBUG or above carries one, the docs cite no tag that does not
    exist, and a tag quoted with its message ("BCN00030: added backend
    ...") quotes that tag's message. The Tomcat Listener's tags (Java,
    contrib/tomcat/src/main/java: a string literal that holds the tag)
    count too: each in one literal, none a tag of the module's.
(d) The wire format: docs/wire-format.md, the contract, shows exactly
    the announcement vectors of tests/vectors/ (each under its secret, in
    the same order), the passphrase's key and the first SipHash vector as
    the data files hold them, and names every drop reason of
    lib/beacon_wire.c; README.md's "Where to read on" links it, and README
    shows no vector the data files lack. Nothing reads outside the
    repository: the spec a clone cannot see is no spec.
    Its "Version 1.3: member keys" section shows member keys and
    datagrams of tests/vectors/member-keys.txt only, at least one row
    whole (master, url, key, datagram), links the file, and names the
    label lib/beacon_key.c and beacon_wire.py derive with.
(e) The manual holds together: every relative link and #anchor in
    README.md and docs/*.md resolves; README.md stays under 300 lines,
    shows `make demo` and `make check`, and its "Where to read on" links
    every page of docs/; each page links README.md and the pages before
    and after it in that list.
(f) The map of src/: docs/development.md's map, the only one, names
    every src/*.c and src/*.h, and no file that src/ lacks.
(g) The seam rule, as docs/development.md's "The seam rule" states it:
    only the files its one line "Files that may include mod_proxy.h: ..."
    names include mod_proxy.h (and each of them does), in src/, lib/,
    include/ and cli/; and nothing in lib/ or include/ includes an httpd
    header.

Every check is a function that returns a list of problems, and each is
also run on a mutated copy of the real text (a README without one row, a
C file with a reused tag, ...) to show that it can fail.
"""

import functools
import re
import xml.etree.ElementTree as ET
from collections import Counter, namedtuple
from pathlib import Path

import pytest

import beacon_wire as bw

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
DIRECTIVES_DOC = DOCS / "directives.md"
TROUBLESHOOTING_DOC = DOCS / "troubleshooting.md"
DOC_XML = DOCS / "mod_proxy_beacon.xml"
MODULE_C = REPO / "src" / "mod_proxy_beacon_config.c"
WIRE_C = REPO / "lib" / "beacon_wire.c"
WIRE_DOC = DOCS / "wire-format.md"
VECTORS = REPO / "tests" / "vectors"


def read(path):
    return Path(path).read_text(encoding="utf-8")


def adapter_sources():
    """{name: text} of the module's C files, where the log calls are."""
    return {p.name: read(p) for p in sorted((REPO / "src").glob("*.c"))}


LISTENER_JAVA = REPO / "contrib" / "tomcat" / "src" / "main" / "java"


def listener_sources():
    """{path: text} of the Tomcat Listener's Java files (its log calls)."""
    return {str(p.relative_to(REPO)): read(p) for p in sorted(LISTENER_JAVA.rglob("*.java"))}


# ---------------------------------------------------------------------------
# A little C: comments, tokens, string literals, calls, functions

_COMMENT_OR_LITERAL = re.compile(
    r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)


def strip_comments(src):
    """src with every comment blanked (same length, newlines kept), so that
    a BCNLOGNO in a comment is no call site and offsets still match."""
    def blank(m):
        text = m.group(0)
        return re.sub(r"[^\n]", " ", text) if text.startswith("/") else text
    return _COMMENT_OR_LITERAL.sub(blank, src)


_TOKEN = re.compile(r'''
    (?P<ws>\s+)
  | (?P<str>"(?:\\.|[^"\\\n])*")
  | (?P<chr>'(?:\\.|[^'\\\n])*')
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<num>\d[\w.]*)
  | (?P<op>->|<<|>>|<=|>=|==|!=|&&|\|\||.)
''', re.X | re.S)

Token = namedtuple("Token", "kind text start")

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"',
            "'": "'", "?": "?", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def c_string_value(literal):
    """The value of a C string literal token ("a\\"b" -> a"b)."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)),
                  literal[1:-1])


def tokens(src, pos=0):
    """C tokens of src from pos on, whitespace skipped (comments must have
    been stripped)."""
    for m in _TOKEN.finditer(src, pos):
        if m.lastgroup != "ws":
            yield Token(m.lastgroup, m.group(0), m.start())


def split_args(toks):
    """Tokens of a parenthesised list, its '(' consumed: the list of
    arguments (each a list of tokens), up to the matching ')'."""
    args, cur, depth = [], [], 0
    for tok in toks:
        if tok.text in "([{" and tok.kind == "op":
            depth += 1
        elif tok.text in ")]}" and tok.kind == "op":
            if depth == 0:
                if cur:
                    args.append(cur)
                return args
            depth -= 1
        elif tok.text == "," and depth == 0:
            args.append(cur)
            cur = []
            continue
        cur.append(tok)
    raise ValueError("unbalanced parentheses")


def literal_value(expr):
    """The value of an expression made only of adjacent string literals
    (in parentheses or not), or None."""
    while len(expr) >= 2 and expr[0].text == "(" and expr[-1].text == ")":
        expr = expr[1:-1]
    if expr and all(t.kind == "str" for t in expr):
        return "".join(c_string_value(t.text) for t in expr)
    return None


_FUNC_DEF = re.compile(
    r"^[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\(([^;{}]*?)\)\s*\{", re.M)

Function = namedtuple("Function", "name params start body_start body_end")


def functions(src):
    """Top-level function definitions of (comment-stripped) src."""
    found = []
    for m in _FUNC_DEF.finditer(src):
        if m.group(1) in ("if", "for", "while", "switch", "return"):
            continue
        params = []
        for p in m.group(2).split(","):
            names = re.findall(r"[A-Za-z_]\w*", p)
            if names and names != ["void"]:
                params.append(names[-1])
        depth = 0
        for tok in tokens(src, m.end() - 1):
            if tok.kind == "op" and tok.text == "{":
                depth += 1
            elif tok.kind == "op" and tok.text == "}":
                depth -= 1
                if depth == 0:
                    found.append(Function(m.group(1), params, m.start(),
                                          m.end(), tok.start))
                    break
    return found


def enclosing_function(funcs, pos):
    for f in funcs:
        if f.body_start <= pos <= f.body_end:
            return f
    return None


def calls_of(src, funcs, name):
    """The argument lists of every call of name() in src (comment-stripped):
    the uses inside function bodies, so not its definition or a prototype."""
    out = []
    for m in re.finditer(r"\b%s\s*\(" % re.escape(name), src):
        if enclosing_function(funcs, m.start()) is not None:
            out.append((m.start(), split_args(tokens(src, m.end()))))
    return out


# ---------------------------------------------------------------------------
# Log call sites and what they print

CallSite = namedtuple("CallSite", "file line tag level items args func")

# A printf conversion, APR's %pm & co included. "\x01" stands for a macro
# such as APR_TIME_T_FMT inside the format.
_CONVERSION = re.compile(
    r"%(?:\x01|[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?"
    r"(?:hh|h|ll|l|j|z|t|L)?(?:p[A-Za-z]?|[diouxXeEfFgGaAcsn]))")


def format_items(fmt):
    """[("lit", text) | ("conv", spec)] of a format string; "%%" is text."""
    items, pos = [], 0
    for m in re.finditer(r"%%|" + _CONVERSION.pattern + r"|\x01", fmt):
        if m.start() > pos:
            items.append(("lit", fmt[pos:m.start()]))
        if m.group(0) == "%%":
            items.append(("lit", "%"))
        else:
            items.append(("conv", m.group(0)))
        pos = m.end()
    if pos < len(fmt):
        items.append(("lit", fmt[pos:]))
    merged = []
    for kind, text in items:
        if merged and kind == "lit" and merged[-1][0] == "lit":
            merged[-1] = ("lit", merged[-1][1] + text)
        else:
            merged.append((kind, text))
    return merged


def log_call_sites(sources):
    """Every BCNLOGNO(nnnnn) use in {name: C source}: its tag, the log
    level of the call it sits in, the format after it (as format_items) and
    the arguments that follow the format."""
    sites = []
    for name, raw in sources.items():
        src, funcs = parsed(raw)
        for m in re.finditer(r"\bBCNLOGNO\s*\(\s*(\d+)\s*\)", src):
            toks = tokens(src, m.end())
            fmt, args = "", []
            for tok in toks:
                if tok.kind == "str":
                    fmt += c_string_value(tok.text)
                elif tok.kind == "ident":
                    fmt += "\x01"
                elif tok.text == ",":
                    args = split_args(toks)
                    break
                else:
                    break
            call_start = src.rfind("ap_log_", 0, m.start())
            level = re.match(r"ap_log_\w+\s*\(\s*APLOG_MARK\s*,\s*(\w+)",
                             src[call_start:]) if call_start >= 0 else None
            sites.append(CallSite(
                name, src.count("\n", 0, m.start()) + 1, m.group(1),
                level.group(1) if level else None, format_items(fmt), args,
                enclosing_function(funcs, m.start())))
    return sites


def resolve_literals(expr, src, func, funcs, depth=0):
    """The string literals an argument can take, when that can be read off
    the source: a literal; cond ? literal : literal; a parameter of the
    enclosing function that every caller in the same file passes as a
    literal; a local variable assigned literals, or the literals returned
    by a function of the same file it is assigned from. None otherwise."""
    if depth > 3 or not expr:
        return None
    value = literal_value(expr)
    if value is not None:
        return [value]
    level, qmark, colon = 0, None, None
    for i, tok in enumerate(expr):
        if tok.text in "([{" and tok.kind == "op":
            level += 1
        elif tok.text in ")]}" and tok.kind == "op":
            level -= 1
        elif level == 0 and tok.text == "?" and qmark is None:
            qmark = i
        elif level == 0 and tok.text == ":" and qmark is not None:
            colon = i
            break
    if qmark is not None and colon is not None:
        a = resolve_literals(expr[qmark + 1:colon], src, func, funcs, depth + 1)
        b = resolve_literals(expr[colon + 1:], src, func, funcs, depth + 1)
        return a + b if a and b else None
    if len(expr) != 1 or expr[0].kind != "ident" or func is None:
        return None
    name = expr[0].text
    if name in func.params:
        index = func.params.index(name)
        found = []
        for pos, args in calls_of(src, funcs, func.name):
            caller = enclosing_function(funcs, pos)
            got = resolve_literals(args[index], src, caller, funcs, depth + 1) \
                if index < len(args) else None
            if not got:
                return None
            found += got
        return found or None
    found = []
    body = src[func.body_start:func.body_end]
    for m in re.finditer(r"\b%s\s*=(?!=)" % re.escape(name), body):
        rhs = []
        for tok in tokens(body, m.end()):
            if tok.text == ";":
                break
            rhs.append(tok)
        value = literal_value(rhs)
        if value is not None:
            found.append(value)
        elif len(rhs) >= 2 and rhs[0].kind == "ident" and rhs[1].text == "(":
            callee = next((f for f in funcs if f.name == rhs[0].text), None)
            if callee:
                cbody = src[callee.body_start:callee.body_end]
                for r in re.finditer(r"\breturn\b", cbody):
                    ret = []
                    for tok in tokens(cbody, r.end()):
                        if tok.text == ";":
                            break
                        ret.append(tok)
                    value = literal_value(ret)
                    if value is not None:
                        found.append(value)
    return found or None


CLAUSE_BREAKS = (": ", "; ", " (")


def clip(text):
    """A literal run as the docs quote it: without leading punctuation,
    up to the first clause break (": ", "; ", " ("), where the message goes
    on with detail."""
    text = re.sub(r"^[^\w'\"]+", "", text)
    cut = min([i for i in (text.find(b) for b in CLAUSE_BREAKS) if i >= 0]
              + [len(text)])
    return text[:cut].rstrip(" :;,.")


def words(text):
    return len([w for w in text.split() if re.search(r"[A-Za-z]", w)])


def message_fragments(items, resolve=lambda index: None):
    """The fragments of one message that the docs must quote.

    The rule: skip a leading "%s: " (the receiver's label); a message that
    starts with text gives that text up to its first conversion, clipped
    at a clause break (clip()); when that is a lone word ("balancer://",
    "ProxyBeaconTimeout"), also the first later literal run of 3+ words,
    if there is one. A message that starts with a conversion gives, when the
    argument's possible values are string literals (resolve(index) returns
    them), each value followed by the text up to the next conversion;
    otherwise its first literal run of 3+ words. [] when nothing fits:
    the caller reports that, so such a message needs a look."""
    items = list(items)
    arg = 0
    if (len(items) >= 2 and items[0] == ("conv", "%s") and items[1][0] == "lit"
            and items[1][1].startswith(": ")):
        rest = items[1][1][2:]
        items = ([("lit", rest)] if rest else []) + items[2:]
        arg = 1

    def first_run(candidates):
        for kind, text in candidates:
            if kind == "lit" and words(clip(text)) >= 3:
                return clip(text)
        return None

    if not items:
        return []
    if items[0][0] == "lit":
        lead = clip(items[0][1])
        if words(lead) >= 2:
            return [lead]
        run = first_run(items[1:])
        return [f for f in (lead, run) if f]
    values = resolve(arg)
    if values:
        tail = items[1][1] if len(items) > 1 and items[1][0] == "lit" else ""
        return [clip(v + tail) for v in values]
    run = first_run(items)
    return [run] if run else []


@functools.lru_cache(maxsize=None)
def parsed(raw):
    """(comment-stripped source, its functions), once per text."""
    src = strip_comments(raw)
    return src, functions(src)


def site_fragments(site, sources):
    src, funcs = parsed(sources[site.file])

    def resolve(index):
        if index >= len(site.args):
            return None
        return resolve_literals(site.args[index], src, site.func, funcs)
    return message_fragments(site.items, resolve)


def drop_reasons(wire_c):
    """The reasons table of lib/beacon_wire.c: {enum: log fragment}."""
    return dict(re.findall(r'\[\s*(BEACON_\w+)\s*\]\s*=\s*\{\s*"((?:\\.|[^"\\])*)"',
                           strip_comments(wire_c)))


# ---------------------------------------------------------------------------
# The manual's pages and the XML

def md_section(text, title):
    """The body of the "## title" section of a Markdown text ("" if none)."""
    m = re.search(r"^##[ \t]+%s[ \t]*\n(.*?)(?=^##[ \t]|\Z)" % re.escape(title),
                  text, re.M | re.S)
    return m.group(1) if m else ""


def normalized(text):
    return re.sub(r"\s+", " ", text.replace("`", ""))


def page_directives(page):
    """{name: (syntax, default)} from the rows of docs/directives.md's
    table (a row starts with the directive's syntax in backquotes)."""
    rows = {}
    for line in page.splitlines():
        m = re.match(r"\|\s*`((ProxyBeacon\w+)[^`]*)`\s*\|\s*([^|]*?)\s*\|", line)
        if m:
            # a | inside a table cell is written \| (GitHub's tables)
            rows[m.group(2)] = (m.group(1).strip().replace("\\|", "|"),
                                m.group(3).strip("` "))
    return rows


def command_directives(module_c):
    """{name: context} of the AP_INIT_* entries of the command_rec table."""
    return dict(re.findall(
        r'\bAP_INIT_\w+\s*\(\s*"([^"]+)"\s*,\s*[^,]+,\s*[^,]+,\s*([\w|\s]+?)\s*,',
        strip_comments(module_c)))


def xml_directives(xml_text):
    """{name: (syntax, default or None, [contexts])} of the XML's
    <directivesynopsis> blocks."""
    root = ET.fromstring(xml_text)
    out = {}
    for ds in root.iter("directivesynopsis"):
        def text(tag):
            el = ds.find(tag)
            return None if el is None else " ".join("".join(el.itertext()).split())
        out[text("name")] = (text("syntax"), text("default"),
                             [c.text.strip() for c in ds.iter("context")])
    return out


# What httpd's manual calls the contexts of a command_rec's req_override.
CONTEXTS = {"RSRC_CONF": ["server config", "virtual host"],
            "RSRC_CONF | ACCESS_CONF": ["server config", "virtual host", "directory"]}
NO_DEFAULT = ("none", "required", "")


def check_directives(module_c, page, xml_text):
    code = command_directives(module_c)
    rows = page_directives(page)
    docs = xml_directives(xml_text)
    problems = []
    if not code:
        problems.append("no AP_INIT_* entry found in the command_rec table")
    for name in sorted(set(code) - set(rows)):
        problems.append(f"{name}: in the command_rec table, no row in docs/directives.md")
    for name in sorted(set(code) - set(docs)):
        problems.append(f"{name}: in the command_rec table, no <directivesynopsis> in "
                        "docs/mod_proxy_beacon.xml")
    for name in sorted(set(rows) - set(code)):
        problems.append(f"{name}: documented in docs/directives.md, but the module has no such "
                        "directive")
    for name in sorted(set(docs) - set(code)):
        problems.append(f"{name}: documented in docs/mod_proxy_beacon.xml, but the module "
                        "has no such directive")
    for name in sorted(set(code) & set(docs)):
        syntax, default, contexts = docs[name]
        want = CONTEXTS.get(" ".join(code[name].split()))
        if want is None:
            problems.append(f"{name}: context {code[name]} has no manual name in this test yet")
        elif contexts != want:
            problems.append(f"{name}: XML contexts {contexts}, command_rec says {want}")
        if name in rows:
            row_syntax, row_default = rows[name]
            if syntax != row_syntax:
                problems.append(f"{name}: XML syntax '{syntax}' differs from docs/directives.md's "
                                f"'{row_syntax}'")
            want_default = None if row_default.lower() in NO_DEFAULT else f"{name} {row_default}"
            if default != want_default:
                problems.append(f"{name}: XML default {default!r}, docs/directives.md says "
                                f"{row_default!r}")
    return problems


TROUBLESHOOTING = "docs/troubleshooting.md's Log messages"


def check_log_fragments(sources, wire_c, page):
    """Every tagged message's fragments, and every drop reason, in the
    "Log messages" section of docs/troubleshooting.md (page)."""
    section = normalized(md_section(page, "Log messages"))
    problems = []
    if not section.strip():
        return ["docs/troubleshooting.md has no '## Log messages' section"]
    for site in log_call_sites(sources):
        frags = list(dict.fromkeys(site_fragments(site, sources)))
        if not frags:
            problems.append(f"BCN{site.tag} ({site.file}:{site.line}): no literal text to look "
                            "for; give the message a fixed lead, or teach this test")
        for frag in frags:
            if normalized(frag) not in section:
                problems.append(f"BCN{site.tag} ({site.file}:{site.line}): "
                                f"'{frag}' is not in {TROUBLESHOOTING}")
    reasons = drop_reasons(wire_c)
    if len(reasons) < 2:
        problems.append("no reasons table found in lib/beacon_wire.c")
    for enum, frag in sorted(reasons.items()):
        if frag != "ok" and normalized(frag) not in section:
            problems.append(f"drop reason {enum}: '{frag}' is not in {TROUBLESHOOTING}")
    return problems


_LEVEL_TAGGED = ("APLOG_EMERG", "APLOG_ALERT", "APLOG_CRIT", "APLOG_ERR",
                 "APLOG_WARNING", "APLOG_NOTICE", "APLOG_INFO", "APLOG_DEBUG")


_JAVA_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def java_tags(java_sources):
    """[(tag, file, line)] of every BCN tag in a string literal of
    {name: Java source}: Java's comments and literals are C's."""
    return [(tag, name, line) for tag, name, line, _ in java_messages(java_sources)]


def java_messages(java_sources):
    """[(tag, file, line, fragment)]: java_tags, with the text that
    follows "BCNnnnnn: " in its literal, clipped as the docs quote it
    ("" when the literal ends there)."""
    found = []
    for name, raw in java_sources.items():
        src = strip_comments(raw)
        for lit in _JAVA_STRING.finditer(src):
            text = c_string_value(lit.group(0))
            for m in re.finditer(r"\bBCN(\d{5})\b(?::[ ]?)?", text):
                found.append((m.group(1), name, src.count("\n", 0, lit.start()) + 1,
                              clip(text[m.end():])))
    return found


def check_tags(sources, doc_texts, java_sources=None):
    """One call site per tag; a tag on every log call at DEBUG or above;
    no tag cited in doc_texts ({name: text}) that the code lacks. The
    Listener's Java tags (java_sources): each in one literal, none the
    module's."""
    problems = []
    sites = log_call_sites(sources)
    counts = Counter(s.tag for s in sites)
    jtags = java_tags(java_sources or {})
    for tag, n in sorted(Counter(tag for tag, _, _ in jtags).items()):
        where = ", ".join(f"{f}:{ln}" for t, f, ln in jtags if t == tag)
        if n > 1:
            problems.append(f"BCN{tag} is used in {n} Java literals: {where}")
        if tag in counts:
            problems.append(f"BCN{tag} is the module's and the Listener's: {where}")
    for tag, n in sorted(counts.items()):
        if n > 1:
            where = ", ".join(f"{s.file}:{s.line}" for s in sites if s.tag == tag)
            problems.append(f"BCN{tag} is used at {n} call sites: {where}")
    for s in sites:
        if not re.fullmatch(r"\d{5}", s.tag):
            problems.append(f"BCN{s.tag} ({s.file}:{s.line}): a tag is five digits")
    for name, raw in sources.items():
        src = strip_comments(raw)
        for m in re.finditer(r"\bap_log_(?:error|perror|rerror|cerror)\s*\(", src):
            args = split_args(tokens(src, m.end()))
            level = args[1][0].text if len(args) > 1 and args[1] else ""
            if level in _LEVEL_TAGGED and not any(
                    t.text == "BCNLOGNO" for arg in args for t in arg):
                problems.append(f"{name}:{src.count(chr(10), 0, m.start()) + 1}: "
                                f"a log call at {level} without a BCNLOGNO tag")
    known = set(counts) | {tag for tag, _, _ in jtags}
    for doc, text in doc_texts.items():
        for tag in sorted(set(re.findall(r"\bBCN(\d{5})\b", text)) - known):
            problems.append(f"{doc} cites BCN{tag}, which no call site uses")
    return problems


_QUOTED = re.compile(r"\bBCN(\d{5}): ((?:(?!BCN\d{5})[^`|\n]|\n(?![ \t]*\n))*)")


def check_quoted_messages(sources, doc_texts, java_sources=None):
    """A tag quoted with its message ("BCN00030: added backend URL ...",
    as an example of the log) quotes a fragment of that tag's message;
    a Listener's tag, the text its literal has after the tag."""
    frags = {}
    for site in log_call_sites(sources):
        frags.setdefault(site.tag, []).extend(site_fragments(site, sources))
    for tag, _, _, fragment in java_messages(java_sources or {}):
        if fragment:
            frags.setdefault(tag, []).append(fragment)
    problems = []
    for doc, text in doc_texts.items():
        for m in _QUOTED.finditer(text):
            tag, quoted = m.group(1), normalized(m.group(2))
            if tag in frags and not any(normalized(f) in quoted for f in frags[tag]):
                problems.append(f"{doc} quotes BCN{tag} as '{quoted.strip()}', but its "
                                f"message says {frags[tag]}")
    return problems


def doc_pages():
    """{file name: text} of the manual's pages, docs/*.md."""
    return {p.name: read(p) for p in sorted(DOCS.glob("*.md"))}


def manual_files():
    """{path: text} of README.md and docs/*.md, the files check_links reads."""
    files = {"README.md": read(README)}
    files.update({f"docs/{name}": text for name, text in doc_pages().items()})
    return files


def doc_texts():
    """{path: text} of README.md, every page of docs/ and the XML."""
    return {**manual_files(), "docs/mod_proxy_beacon.xml": read(DOC_XML)}


# ---------------------------------------------------------------------------
# The manual: links, anchors, the entry point

_FENCED = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[(?:[^\]\n]|\n(?!\n))*\]\(([^()\s]+)\)")


def prose(text):
    """text without fenced blocks and code spans, where [x](y) is no link."""
    return _CODE_SPAN.sub("", _FENCED.sub("", text))


def md_links(text):
    """The targets of the inline links of a Markdown text."""
    return [m.group(1) for m in _LINK.finditer(prose(text))]


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped
    (backquotes, colons, parentheses, ...), spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text):
    """The #anchors of a Markdown text's headings; a repeated heading gets
    -1, -2, ... as on GitHub."""
    seen, found = Counter(), set()
    for m in re.finditer(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", _FENCED.sub("", text), re.M):
        base = slug(m.group(1))
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def check_links(files, repo=REPO):
    """{path relative to repo: Markdown text}: every relative link names a
    file or folder of the repository, and every #anchor a heading of the
    Markdown file it points into. Links with a scheme are not followed."""
    problems = []
    for name, text in sorted(files.items()):
        here = (repo / name).parent
        for target in md_links(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (here / path).resolve() if path else (repo / name).resolve()
            if repo.resolve() not in dest.parents and dest != repo.resolve():
                problems.append(f"{name}: link {target} leaves the repository")
                continue
            if not dest.exists():
                problems.append(f"{name}: link {target}: no such file")
                continue
            if anchor:
                other = files.get(str(dest.relative_to(repo.resolve())))
                if other is None and dest.suffix == ".md":
                    other = read(dest)
                if other is None:
                    problems.append(f"{name}: link {target}: an anchor into a file that "
                                    "is not Markdown")
                elif anchor not in anchors(other):
                    problems.append(f"{name}: link {target}: no heading gives #{anchor}")
    return problems


README_MAX_LINES = 300
READ_ON = "Where to read on"


def reading_order(readme):
    """The docs pages in the order README's "Where to read on" links them."""
    order = []
    for target in md_links(md_section(readme, READ_ON)):
        m = re.fullmatch(r"docs/([\w.-]+\.md)", target.partition("#")[0])
        if m and m.group(1) not in order:
            order.append(m.group(1))
    return order


def check_readme(readme, pages):
    """README is the entry point: short, with the two commands, and its
    "Where to read on" links every page of docs/ (pages: their names)."""
    problems = []
    lines = readme.count("\n") + (not readme.endswith("\n"))
    if lines >= README_MAX_LINES:
        problems.append(f"README.md has {lines} lines; it is the entry point, under "
                        f"{README_MAX_LINES}: the manual goes to docs/")
    commands = md_section(readme, "Two commands")
    for command in ("make demo", "make check"):
        if command not in commands:
            problems.append(f"README.md's 'Two commands' does not show `{command}`")
    linked = reading_order(readme)
    if not md_section(readme, READ_ON).strip():
        problems.append(f"README.md has no '## {READ_ON}' section")
    for page in sorted(set(pages) - set(linked)):
        problems.append(f"README.md's '{READ_ON}' does not link docs/{page}")
    return problems


def check_page_heads(readme, pages, head_lines=15):
    """{name: text} of docs/*.md: each page's first head_lines link README
    and its neighbours in README's reading order."""
    order = reading_order(readme)
    problems = []
    for i, name in enumerate(order):
        if name not in pages:
            continue
        head = "\n".join(pages[name].splitlines()[:head_lines])
        links = {t.partition("#")[0] for t in md_links(head)}
        wanted = ["../README.md"] + order[max(i - 1, 0):i] + order[i + 1:i + 2]
        for want in wanted:
            if want not in links:
                problems.append(f"docs/{name}: its first {head_lines} lines do not link {want}")
    return problems


# ---------------------------------------------------------------------------
# Wire-format test vectors

_VECTOR_ITEM = re.compile(
    r"^[ \t]*(?P<datagram>BEACON [^\n]*?)[ \t]*$"
    r"|(?P<key>hex:[0-9A-Fa-f]{32})"
    r"|[Pp]assphrase\s+`(?P<passphrase>[^`]+)`"
    r"|`(?P<keybytes>[0-9a-f]{32})`"
    r"|`(?P<tag>[0-9a-f]{16})`", re.M)


def vector_part(text):
    """The test-vector part of a text: from a "Test vectors" line or
    heading to the next "## " heading."""
    m = re.search(r"^(?:##+[ \t]+)?Test vectors\b(.*?)(?=^##[ \t]|\Z)", text, re.M | re.S)
    return m.group(0) if m else ""


def wire_vectors(text):
    """[(kind, value)] in order: datagrams, keys, passphrases, key bytes and
    SipHash tags of the test-vector part."""
    return [(m.lastgroup, m.group(m.lastgroup))
            for m in _VECTOR_ITEM.finditer(vector_part(text))]


Shown = namedtuple("Shown", "datagrams passphrase_keys sip_keys tags")


def shown_vectors(text):
    """What the test-vector part of a text shows: its datagrams as
    [(secret, datagram)], each under the last key or passphrase named
    before it; {passphrase: key} for a key in backquotes right after a
    passphrase; the other 32-hex-digit keys (SipHash's); and the 16-hex-digit
    tags in backquotes."""
    shown = Shown([], {}, [], [])
    secret, previous = None, None
    for kind, value in wire_vectors(text):
        if kind in ("key", "passphrase"):
            secret = value
        elif kind == "datagram":
            shown.datagrams.append((secret, value))
        elif kind == "keybytes" and previous == "passphrase":
            shown.passphrase_keys[secret] = value
        elif kind == "keybytes":
            shown.sip_keys.append(value)
        else:
            shown.tags.append(value)
        previous = kind
    return shown


def data_vectors(directory=VECTORS):
    """The same, from the data files: every announcement vector, the keys of
    the passphrases they use, and the SipHash vectors [(key, tag)]."""
    announcements = [(r["secret"].decode(), r["datagram"].decode()) for r in
                     bw.read_vectors("announcements.txt", ["version", "secret", "datagram"],
                                     directory)]
    keys = {r["secret"].decode(): r["key"].decode() for r in
            bw.read_vectors("secrets.txt", ["secret", "key", "name"], directory)}
    sip = [(r["key"].decode(), r["tag"].decode()) for r in
           bw.read_vectors("siphash24.txt", ["key", "message", "tag"], directory)]
    passphrases = {s for s, _ in announcements if not s.startswith("hex:")}
    return Shown(announcements, {p: keys.get(p) for p in passphrases}, sip, None)


def check_vectors(text, data, where, complete):
    """Problems with the vectors text shows against the data files': all of
    them in the same order (complete), or only some, but each exactly."""
    shown, problems = shown_vectors(text), []
    if complete and not shown.datagrams:
        return [f"{where} has no 'Test vectors' part with datagrams"]
    for secret, dg in shown.datagrams:
        if (secret, dg) not in data.datagrams:
            problems.append(f"{where} shows {dg} under {secret}, which "
                            "tests/vectors/announcements.txt does not hold")
    if complete:
        for secret, dg in data.datagrams:
            if (secret, dg) not in shown.datagrams:
                problems.append(f"{where} lacks {dg} under {secret} "
                                "(tests/vectors/announcements.txt)")
        if not problems and shown.datagrams != data.datagrams:
            problems.append(f"{where} shows the vectors in another order than "
                            "tests/vectors/announcements.txt")
    for phrase, key in shown.passphrase_keys.items():
        if data.passphrase_keys.get(phrase) != key:
            problems.append(f"{where}: passphrase {phrase} gives {key}, tests/vectors/"
                            f"secrets.txt says {data.passphrase_keys.get(phrase)}")
    if complete:
        for phrase in sorted(set(data.passphrase_keys) - set(shown.passphrase_keys)):
            problems.append(f"{where} does not show the key of passphrase {phrase}")
    return problems + check_sip_vectors(shown, data, where, complete)


def check_sip_vectors(shown, data, where, complete):
    macs = {dg.rsplit(" mac=", 1)[-1] for _, dg in data.datagrams}
    sip_keys, sip_tags = {k for k, _ in data.sip_keys}, {t for _, t in data.sip_keys}
    problems = [f"{where} shows the SipHash key {k}, not the one of tests/vectors/siphash24.txt"
                for k in shown.sip_keys if k not in sip_keys]
    problems += [f"{where} shows the tag {t}, which no vector of tests/vectors has"
                 for t in shown.tags if t not in sip_tags | macs]
    first_key, first_tag = data.sip_keys[0] if data.sip_keys else (None, None)
    if complete and (first_key not in shown.sip_keys or first_tag not in shown.tags):
        problems.append(f"{where} does not show the first SipHash vector "
                        f"(key {first_key}, tag {first_tag})")
    return problems


MEMBER_KEYS_SECTION = "Version 1.3: member keys (derive mode)"
KEY_C = REPO / "lib" / "beacon_key.c"


def member_key_rows(directory=VECTORS):
    return bw.read_vectors("member-keys.txt",
                           ["master", "service", "url", "key", "datagram", "name"], directory)


def check_member_keys(doc, rows, key_c):
    """Problems with what the member-key section shows against the rows
    of member-keys.txt and the label of lib/beacon_key.c."""
    where = f"docs/wire-format.md's '{MEMBER_KEYS_SECTION}'"
    section = md_section(doc, MEMBER_KEYS_SECTION)
    if not section:
        return [f"docs/wire-format.md has no section '{MEMBER_KEYS_SECTION}'"]
    datagrams = re.findall(r"^[ \t]+(BEACON [^\n]*?)[ \t]*$", section, re.M)
    keys = set(re.findall(r"`([0-9a-f]{32})`", section))
    masters = set(re.findall(r"`(hex:[0-9a-f]{32})`", section))
    by_datagram = {r["datagram"].decode(): r for r in rows}
    problems = [f"{where} shows {dg}, which tests/vectors/member-keys.txt does not hold"
                for dg in datagrams if dg not in by_datagram]
    problems += [f"{where} shows the key {k}, which no row of tests/vectors/member-keys.txt has"
                 for k in sorted(keys - {r["key"].decode() for r in rows})]
    whole = [dg for dg in datagrams if dg in by_datagram
             and by_datagram[dg]["key"].decode() in keys
             and by_datagram[dg]["master"].decode() in masters
             and f"`{by_datagram[dg]['url'].decode()}`" in section]
    if not whole:
        problems.append(f"{where} shows no row whole (master, url, key and datagram)")
    if "(../tests/vectors/member-keys.txt)" not in section:
        problems.append(f"{where} does not link tests/vectors/member-keys.txt")
    label = re.search(r'#define MEMBER_LABEL "([^"]*)"', key_c)
    for name, value in (("lib/beacon_key.c", label.group(1) if label else None),
                        ("beacon_wire.py", bw.MEMBER_LABEL.decode())):
        if f'`"{value}"' not in section:
            problems.append(f"{where} does not show the label {name} derives with ({value})")
    return problems


def check_reasons_named(doc, wire_c):
    """Every drop reason's log fragment, in backquotes, in the wire format."""
    reasons = drop_reasons(wire_c)
    if len(reasons) < 2:
        return ["no reasons table found in lib/beacon_wire.c"]
    return [f"drop reason {enum}: `{frag}` is not in docs/wire-format.md"
            for enum, frag in sorted(reasons.items())
            if frag != "ok" and f"`{frag}`" not in doc]


def check_readme_links_the_spec(readme):
    if "wire-format.md" not in reading_order(readme):
        return [f"README.md's '{READ_ON}' does not link docs/wire-format.md"]
    return []


# The wire format's old home, outside the repository.
_OUTSIDE = re.compile(r"shared/design/wire-format\.md")


def check_nothing_reads_outside(files):
    """{name: text}: the ones that read or cite the wire format's old home."""
    return [f"{name} cites {m.group(0)} outside the repository: the contract is "
            "docs/wire-format.md"
            for name, text in sorted(files.items()) for m in [_OUTSIDE.search(text)] if m]


def repository_test_sources():
    found = {}
    for pattern in ("tests/**/*.py", "tests/**/*.c", "tests/**/*.h", "fuzz/*.c", "fuzz/Makefile",
                    "fuzz/run", "CMakeLists.txt", "Makefile"):
        for path in REPO.glob(pattern):
            found[str(path.relative_to(REPO))] = read(path)
    return found


DEVELOPMENT_DOC = DOCS / "development.md"
_SRC_MAP_START = "The map of src/"
_SRC_NAME = re.compile(r"\b(mod_proxy_beacon\w*)\.(\{c,h\}|c|h)(?![\w.])")


def src_map_names(doc):
    """The file names on the map of src/: the indented block after the
    paragraph that names it, each "name.{c,h}" read as both files."""
    start = doc.find(_SRC_MAP_START)
    if start < 0:
        return None
    lines = doc[start:].split("\n")
    while lines and not lines[0].startswith("    "):
        lines.pop(0)
    block = []
    for line in lines:
        if line.strip() and not line.startswith("    "):
            break
        block.append(line)
    names = set()
    for stem, ext in _SRC_NAME.findall("\n".join(block)):
        names.update({stem + ".c", stem + ".h"} if ext == "{c,h}" else {stem + "." + ext})
    return names


def check_src_map(doc, files):
    """docs/development.md against src/'s file names (files)."""
    names = src_map_names(doc)
    if not names:
        return [f"docs/development.md has no map of src/ ('{_SRC_MAP_START}')"]
    return ([f"src/{f} is not on docs/development.md's map of src/"
             for f in sorted(set(files) - names)] +
            [f"docs/development.md's map of src/ names src/{f}, which does not exist"
             for f in sorted(names - set(files))])


def src_files():
    return sorted(p.name for pattern in ("*.c", "*.h") for p in (REPO / "src").glob(pattern))


SEAM_SECTION = "The seam rule"
_MOD_PROXY_LINE = re.compile(r"^Files that may include mod_proxy\.h:(.*)$", re.M)
# An #include, spaces allowed wherever the preprocessor allows them.
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*([^>"\n]*?)[ \t]*[>"]', re.M)
# httpd's own headers (its include/ and the modules' public ones), by name:
# none of them is APR's (apr_*.h, apu*.h), none is libbeacon's (beacon*.h).
_HTTPD_HEADER = re.compile(r"(?:httpd|(?:http|ap|apache|mod|util|mpm)_\w+|scoreboard|heartbeat"
                           r"|unixd|os|cache_common)\.h")


def mod_proxy_allowed(doc):
    """The files the seam rule's line lets include mod_proxy.h, read from
    that section only (None without the line)."""
    m = _MOD_PROXY_LINE.search(md_section(doc, SEAM_SECTION))
    return set(re.findall(r"`([^`]+)`", m.group(1))) if m else None


def included_headers(text):
    """The file names a C text includes ("apache2/httpd.h" as httpd.h),
    comments left out."""
    return [Path(name).name for name in _INCLUDE.findall(strip_comments(text))]


def seam_sources(repo=REPO):
    """{path relative to repo: text} of every C file under src/, lib/,
    include/ and cli/."""
    return {str(p.relative_to(repo)): read(p)
            for folder in ("src", "lib", "include", "cli")
            for p in sorted((repo / folder).rglob("*")) if p.suffix in (".c", ".h")}


def check_seam(doc, sources):
    """docs/development.md's seam rule against the C files (seam_sources())."""
    allowed = mod_proxy_allowed(doc)
    if not allowed:
        return ["docs/development.md's seam rule has no line "
                "'Files that may include mod_proxy.h: `...`'"]
    problems = []
    for name, text in sorted(sources.items()):
        headers = included_headers(text)
        if "mod_proxy.h" in headers and name not in allowed:
            problems.append(f"{name} includes mod_proxy.h, which only "
                            f"{', '.join(sorted(allowed))} may (docs/development.md's seam rule)")
        if "mod_proxy.h" not in headers and name in allowed:
            problems.append(f"docs/development.md's seam rule lets {name} include mod_proxy.h, "
                            "which it does not")
        if name.split("/")[0] in ("lib", "include"):
            problems += [f"{name} includes {h}, an httpd header (docs/development.md's seam rule)"
                         for h in headers if _HTTPD_HEADER.fullmatch(h)]
    problems += [f"docs/development.md's seam rule names {f}, which does not exist"
                 for f in sorted(allowed - set(sources))]
    return problems


# ---------------------------------------------------------------------------
# The checks on the real files

def test_directives_are_documented_on_their_page_and_in_xml_and_nothing_more():
    problems = check_directives(read(MODULE_C), read(DIRECTIVES_DOC), read(DOC_XML))
    assert not problems, "\n".join(problems)


def test_every_log_fragment_and_drop_reason_is_on_the_troubleshooting_page():
    problems = check_log_fragments(adapter_sources(), read(WIRE_C), read(TROUBLESHOOTING_DOC))
    assert not problems, "\n".join(problems)


def test_every_tag_has_exactly_one_call_site():
    problems = check_tags(adapter_sources(), doc_texts(), listener_sources())
    assert not problems, "\n".join(problems)


def test_a_tag_quoted_with_its_message_quotes_that_message():
    problems = check_quoted_messages(adapter_sources(), doc_texts(), listener_sources())
    assert not problems, "\n".join(problems)


def test_every_link_and_anchor_of_the_manual_resolves():
    files = manual_files()
    assert len(md_links(files["README.md"])) >= 10, "README's links are found at all"
    problems = check_links(files)
    assert not problems, "\n".join(problems)


def test_every_src_file_is_on_the_map_of_src():
    assert len(src_files()) >= 20, "src/'s files are found at all"
    problems = check_src_map(read(DEVELOPMENT_DOC), src_files())
    assert not problems, "\n".join(problems)


def test_only_the_seam_rules_files_include_mod_proxy_h_and_libbeacon_no_httpd_header():
    sources = seam_sources()
    for folder, least in (("src/", 20), ("lib/", 10), ("include/", 1), ("cli/", 5)):
        assert sum(n.startswith(folder) for n in sources) >= least, f"{folder}'s files are found"
    assert "httpd.h" in included_headers(sources["src/mod_proxy_beacon_util.h"])
    problems = check_seam(read(DEVELOPMENT_DOC), sources)
    assert not problems, "\n".join(problems)


def test_readme_is_the_short_entry_point_and_links_every_page():
    pages = doc_pages()
    problems = check_readme(read(README), pages) + check_page_heads(read(README), pages)
    assert not problems, "\n".join(problems)


def test_wire_format_doc_shows_the_vectors_of_tests_vectors():
    problems = check_vectors(read(WIRE_DOC), data_vectors(), "docs/wire-format.md",
                             complete=True)
    assert not problems, "\n".join(problems)


def test_wire_format_doc_shows_member_keys_of_tests_vectors():
    problems = check_member_keys(read(WIRE_DOC), member_key_rows(), read(KEY_C))
    assert not problems, "\n".join(problems)


def test_readme_shows_no_vector_the_data_files_lack():
    problems = check_vectors(read(README), data_vectors(), "README.md", complete=False)
    problems += check_readme_links_the_spec(read(README))
    assert not problems, "\n".join(problems)


def test_wire_format_doc_names_every_drop_reason():
    problems = check_reasons_named(read(WIRE_DOC), read(WIRE_C))
    assert not problems, "\n".join(problems)


def test_nothing_reads_the_spec_from_outside_the_repository():
    problems = check_nothing_reads_outside(repository_test_sources())
    assert not problems, "\n".join(problems)


def test_xml_is_a_modulesynopsis():
    root = ET.fromstring(read(DOC_XML))
    assert root.tag == "modulesynopsis"
    assert root.get("metafile") == "mod_proxy_beacon.xml.meta"
    order = [el.tag for el in root]
    head = ["name", "description", "status", "sourcefile", "identifier"]
    assert order[:len(head)] == head, order
    assert root.findtext("name") == "mod_proxy_beacon"
    assert root.findtext("status") == "External"
    assert root.findtext("identifier") == "proxy_beacon_module"
    assert (REPO / "src" / root.findtext("sourcefile")).is_file()
    names = [ds.findtext("name") for ds in root.iter("directivesynopsis")]
    assert names == sorted(names), "directives in alphabetical order, as in httpd's manual"
    assert root.find("section[@id='status']") is not None, "a section on the beacon-status handler"


# ---------------------------------------------------------------------------
# The checks can fail: each on a mutated copy of the real text

def without_line(text, needle):
    lines = text.splitlines(keepends=True)
    kept = [ln for ln in lines if needle not in ln]
    assert len(kept) == len(lines) - 1, f"expected one line with {needle!r}"
    return "".join(kept)


def test_self_check_a_missing_directive_row_is_found():
    page = without_line(read(DIRECTIVES_DOC), "| `ProxyBeaconMaxSkew")
    problems = check_directives(read(MODULE_C), page, read(DOC_XML))
    assert "ProxyBeaconMaxSkew: in the command_rec table, no row in docs/directives.md" \
        in problems, problems


def test_self_check_a_directive_the_module_lacks_is_found():
    xml = read(DOC_XML).replace(
        "</modulesynopsis>",
        "<directivesynopsis><name>ProxyBeaconNoSuch</name></directivesynopsis>"
        "</modulesynopsis>")
    page = read(DIRECTIVES_DOC).replace(
        "| `ProxyBeaconInterval", "| `ProxyBeaconGhost x` | none | x |\n| `ProxyBeaconInterval")
    problems = check_directives(read(MODULE_C), page, xml)
    assert "ProxyBeaconNoSuch: documented in docs/mod_proxy_beacon.xml, but the module " \
           "has no such directive" in problems
    assert "ProxyBeaconGhost: documented in docs/directives.md, but the module has no " \
           "such directive" in problems


def test_self_check_a_missing_synopsis_and_a_wrong_default_are_found():
    module_c = read(MODULE_C).replace(
        'AP_INIT_TAKE1("ProxyBeaconInterval"',
        'AP_INIT_TAKE1("ProxyBeaconNew", NULL, NULL, RSRC_CONF, ""),\n'
        '    AP_INIT_TAKE1("ProxyBeaconInterval"')
    xml = read(DOC_XML).replace("<default>ProxyBeaconInterval 5</default>",
                                "<default>ProxyBeaconInterval 10</default>")
    problems = check_directives(module_c, read(DIRECTIVES_DOC), xml)
    assert "ProxyBeaconNew: in the command_rec table, no <directivesynopsis> in " \
           "docs/mod_proxy_beacon.xml" in problems
    assert any(p.startswith("ProxyBeaconInterval: XML default") for p in problems), problems


def test_self_check_missing_troubleshooting_rows_are_found():
    page = without_line(read(TROUBLESHOOTING_DOC), "| `... mac mismatch`")
    page = without_line(page, "| `evicted backend URL`")
    problems = check_log_fragments(adapter_sources(), read(WIRE_C), page)
    assert any("'mac mismatch' is not in" in p for p in problems), problems
    assert any("'evicted backend' is not in" in p for p in problems), problems


SYNTHETIC_C = r'''
static void set_state(server_rec *s, const char *url, const char *what)
{
    ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, BCNLOGNO(00901)
                 "%s member %s", what, url);
}

static const char *problem_of(int n)
{
    if (n) {
        return "the widget is "
               "broken: replace it";
    }
    return NULL;
}

static void run(server_rec *s, struct x *r, int n)
{
    const char *problem = NULL;

    set_state(s, r->url, "parked");
    set_state(s, r->url, n ? "woken" : "kept");
    if (n > 1) {
        problem = "too many frobs";
    }
    else {
        problem = problem_of(n);
    }
    /* a comment: BCNLOGNO(00999) "is not a call site" */
    ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, BCNLOGNO(00902)
                 "%s: dropped frob from %s", r->label, r->peer);
    ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s, BCNLOGNO(00903) "%s (%s)",
                 problem, r->where);
    ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s, BCNLOGNO(00904)
                 "Frob %" APR_TIME_T_FMT " ms is shorter than a frob (about 10 s)", n);
    ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, BCNLOGNO(00902)
                 "%s is now configured in %s; left alone", r->url, r->name);
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s, "untagged %d", n);
    ap_log_error(APLOG_MARK, APLOG_TRACE1, 0, s, "trace lines need no tag");
}
'''


SYNTHETIC_JAVA = r'''
final class L {
    // BCN00399 in a comment is no tag
    void start() {
        log.info("BCN00390: announcing " + url);
        log.warning("BCN00391: cannot send to " + addr);
        log.severe("BCN00390: again");
        log.info("BCN00030: the module's tag");
    }
}
'''


def test_self_check_java_tags_reused_and_cited_are_found():
    c_sources = {"synthetic.c": SYNTHETIC_C}
    java = {"L.java": SYNTHETIC_JAVA}
    assert [t for t, _, _ in java_tags(java)] == ["00390", "00391", "00390", "00030"]
    docs = {"doc": "BCN00391 and BCN00399 and BCN00392"}
    problems = check_tags(c_sources, docs, java)
    assert "BCN00390 is used in 2 Java literals: L.java:5, L.java:7" in problems, problems
    assert "doc cites BCN00392, which no call site uses" in problems, problems
    assert "doc cites BCN00399, which no call site uses" in problems, "a comment is no tag"
    assert not any("BCN00391" in p for p in problems), problems
    problems = check_tags({"a.c": 'ap_log_error(APLOG_MARK, APLOG_INFO, 0, s, '
                                  'BCNLOGNO(00030) "x");'}, {}, java)
    assert "BCN00030 is the module's and the Listener's: L.java:8" in problems, problems


def test_self_check_a_misquoted_java_tag_is_found():
    java = {"L.java": SYNTHETIC_JAVA}
    assert [f for _, _, _, f in java_messages(java)] == [
        "announcing", "cannot send to", "again", "the module's tag"]
    good = {"doc": "`BCN00391: cannot send to ADDR: why` and `BCN00390: announcing URL`"}
    assert not check_quoted_messages({}, good, java)
    bad = {"doc": "`BCN00391: cannot reach ADDR`"}
    assert check_quoted_messages({}, bad, java) == [
        "doc quotes BCN00391 as 'cannot reach ADDR', but its message says ['cannot send to']"]


def test_self_check_fragments_of_synthetic_messages():
    sources = {"synthetic.c": SYNTHETIC_C}
    got = {s.tag + ":" + str(s.line): site_fragments(s, sources)
           for s in log_call_sites(sources)}
    frags = sorted(f for fs in got.values() for f in fs)
    assert frags == sorted([
        "parked member", "woken member", "kept member",     # a parameter, from its callers
        "dropped frob from",                                # "%s: " skipped
        "too many frobs", "the widget is broken",           # a local, and a function's return
        "Frob", "ms is shorter than a frob",                # a lone word leads: and the first run
        "is now configured in",                             # a conversion leads: the first run
    ]), got


def test_self_check_reused_and_missing_tags_are_found():
    problems = check_tags({"synthetic.c": SYNTHETIC_C}, {"doc": "see BCN00901 and BCN00777"})
    assert any(p.startswith("BCN00902 is used at 2 call sites") for p in problems), problems
    assert not any("BCN00999" in p for p in problems), "a comment is no call site"
    assert any("without a BCNLOGNO tag" in p and "APLOG_DEBUG" in p for p in problems), problems
    assert not any("APLOG_TRACE1" in p for p in problems), problems
    assert "doc cites BCN00777, which no call site uses" in problems
    assert not any("BCN00901" in p for p in problems), problems


def test_self_check_a_changed_vector_is_found():
    doc, data = read(WIRE_DOC), data_vectors()
    assert len(shown_vectors(doc).datagrams) >= 6, "the doc's vectors are found at all"
    changed = doc.replace("mac=f73e29a869ca2b00", "mac=f73e29a869ca2b01")
    assert changed != doc
    problems = check_vectors(changed, data, "doc", complete=True)
    assert any("f73e29a869ca2b00" in p and "lacks" in p for p in problems), problems
    assert any("f73e29a869ca2b01" in p and "does not hold" in p for p in problems), problems
    i = doc.rindex("`310e0edd47db6f72`")  # the one in "Test vectors"
    dropped = doc[:i] + "(left out)" + doc[i + len("`310e0edd47db6f72`"):]
    assert any("first SipHash vector" in p
               for p in check_vectors(dropped, data, "doc", complete=True))


def test_self_check_a_vector_under_another_key_or_out_of_order_is_found():
    doc, data = read(WIRE_DOC), data_vectors()
    v1 = next(dg for _, dg in data.datagrams if "seq=17" in dg)
    v2 = next(dg for _, dg in data.datagrams if "seq=18" in dg)
    swapped = doc.replace(v1, "@@").replace(v2, v1).replace("@@", v2)
    assert any("another order" in p
               for p in check_vectors(swapped, data, "doc", complete=True))
    wrong_key = doc.replace("(which gives the key `350dda9f6098771e041755b6923de06e`)",
                            "(which gives the key `350dda9f6098771e041755b6923de06f`)")
    assert wrong_key != doc
    assert any("passphrase a-long-random-shared-cluster-secret gives" in p
               for p in check_vectors(wrong_key, data, "doc", complete=True))


def test_self_check_changed_data_files_are_found(tmp_path):
    for f in VECTORS.glob("*.txt"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    path = tmp_path / "announcements.txt"
    path.write_text(path.read_text().replace("mac=a343ce9488dc383e", "mac=a343ce9488dc383f"))
    problems = check_vectors(read(WIRE_DOC), data_vectors(tmp_path), "doc", complete=True)
    assert any("a343ce9488dc383e" in p for p in problems), problems


def test_self_check_a_changed_member_key_or_datagram_is_found(tmp_path):
    doc, rows, key_c = read(WIRE_DOC), member_key_rows(), read(KEY_C)
    shop = next(r for r in rows if r["service"] == b"shop")
    key, mac = shop["key"].decode(), shop["datagram"].decode()[-16:]
    assert f"`{key}`" in doc and mac in doc
    changed = doc.replace(key, key[:-1] + ("0" if key[-1] != "0" else "1"))
    assert any("shows the key" in p for p in check_member_keys(changed, rows, key_c))
    changed = doc.replace(mac, mac[:-1] + ("0" if mac[-1] != "0" else "1"))
    problems = check_member_keys(changed, rows, key_c)
    assert any("member-keys.txt does not hold" in p for p in problems), problems
    assert any("no row whole" in p for p in problems), problems
    unlinked = doc.replace("(../tests/vectors/member-keys.txt)", "(member-keys.txt)")
    assert any("does not link" in p for p in check_member_keys(unlinked, rows, key_c))
    relabelled = key_c.replace('"beacon-member-v1"', '"beacon-member-v2"')
    assert relabelled != key_c
    assert any("lib/beacon_key.c derives with (beacon-member-v2)" in p
               for p in check_member_keys(doc, rows, relabelled))
    gone = doc.replace("## " + MEMBER_KEYS_SECTION, "## Member keys")
    assert check_member_keys(gone, rows, key_c) == [
        f"docs/wire-format.md has no section '{MEMBER_KEYS_SECTION}'"]
    # a data file whose key changed no longer matches the page
    for f in VECTORS.glob("*.txt"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    path = tmp_path / "member-keys.txt"
    path.write_text(path.read_text().replace(key, key[::-1]))
    assert check_member_keys(doc, member_key_rows(tmp_path), key_c)


def test_self_check_a_readme_vector_the_data_lacks_is_found():
    readme = ("## Where to read on\n\n* [The wire format](docs/wire-format.md)\n\n"
              "Test vectors (key `hex:00112233445566778899aabbccddeeff`):\n\n"
              "    BEACON ts=1 mac=0123456789abcdef\n")
    problems = check_vectors(readme, data_vectors(), "README.md", complete=False)
    assert any("BEACON ts=1 mac=0123456789abcdef" in p for p in problems), problems
    assert not check_readme_links_the_spec(readme)
    assert check_readme_links_the_spec("## Where to read on\n\nNo link to docs/wire-format.md.\n")
    assert check_readme_links_the_spec(read(README).replace("](docs/wire-format.md)", "]()"))


def test_self_check_a_missing_drop_reason_is_found():
    doc = read(WIRE_DOC).replace("`replayed/reordered ts`", "replayed ts")
    assert any("replayed/reordered ts" in p for p in check_reasons_named(doc, read(WIRE_C)))


def test_self_check_a_path_outside_the_repository_is_found():
    old_home = "shared/design/" + "wire-format.md"  # not this file's own text
    problems = check_nothing_reads_outside({
        "a.py": f'DESIGN = REPO / ".." / "{old_home}"',
        "b.py": f"# written from ../{old_home}",
        "c.c": f"/* /work/{old_home} */",
        "d.py": "# docs/wire-format.md; shared secret"})
    assert [p.split(" ")[0] for p in problems] == ["a.py", "b.py", "c.c"], problems


def test_self_check_broken_links_and_anchors_are_found():
    files = manual_files()
    page = files["docs/troubleshooting.md"]
    assert "](how-it-works.md#member-identity)" in page
    files["docs/troubleshooting.md"] = page.replace(
        "](how-it-works.md#member-identity)", "](how-it-works.md#member-identiy)")
    files["docs/benchmarks.md"] = files["docs/benchmarks.md"].replace(
        "](../bench/README.md)", "](../bench/READ.md)")
    files["README.md"] += ("\n[a](#no-such-heading) [b](docs/no-such-page.md) "
                           "[c](https://example.com/#x) `[d](#in-code)`\n"
                           "```\n[e](#in-a-fence)\n```\n[f](../../etc/passwd)\n")
    problems = check_links(files)
    assert sorted(problems) == sorted([
        "docs/troubleshooting.md: link how-it-works.md#member-identiy: no heading gives "
        "#member-identiy",
        "docs/benchmarks.md: link ../bench/READ.md: no such file",
        "README.md: link #no-such-heading: no heading gives #no-such-heading",
        "README.md: link docs/no-such-page.md: no such file",
        "README.md: link ../../etc/passwd leaves the repository",
    ]), problems


def test_self_check_anchors_are_githubs():
    text = ("# The beacon wire format\n## Version 1.1\n### `route`, `lbfactor`: implemented\n"
            "```\n# not a heading\n```\n## Notes\n## Notes\n")
    assert anchors(text) == {"the-beacon-wire-format", "version-11",
                             "route-lbfactor-implemented", "notes", "notes-1"}


def test_self_check_a_long_readme_and_an_unlinked_page_are_found():
    pages = doc_pages()
    readme = read(README)
    assert not check_readme(readme, pages)
    long_readme = readme + "filler\n" * (README_MAX_LINES - readme.count("\n"))
    assert any("README.md has 300 lines" in p for p in check_readme(long_readme, pages))
    unlinked = readme.replace("](docs/security.md)", "](docs/security.md.gone)")
    assert check_readme(unlinked, pages) == [
        "README.md's 'Where to read on' does not link docs/security.md"]
    pages["new-page.md"] = "# New\n"
    assert "README.md's 'Where to read on' does not link docs/new-page.md" \
        in check_readme(readme, pages)
    no_check = readme.replace("make check    #", "make test     #")
    assert no_check != readme
    assert "README.md's 'Two commands' does not show `make check`" \
        in check_readme(no_check, pages)


def test_self_check_a_page_without_its_neighbours_is_found():
    pages = doc_pages()
    assert not check_page_heads(read(README), pages)
    pages["security.md"] = pages["security.md"].replace("](member-keys.md)", "]()", 1)
    pages["directives.md"] = pages["directives.md"].replace("](../README.md)", "]()", 1)
    assert sorted(check_page_heads(read(README), pages)) == [
        "docs/directives.md: its first 15 lines do not link ../README.md",
        "docs/security.md: its first 15 lines do not link member-keys.md"]


def test_self_check_a_misquoted_tag_is_found():
    docs = {"README.md": read(README)}
    assert "BCN00030: added backend" in docs["README.md"]
    assert not check_quoted_messages(adapter_sources(), docs)
    docs["README.md"] = docs["README.md"].replace("BCN00030: added backend",
                                                  "BCN00030: removed backend")
    problems = check_quoted_messages(adapter_sources(), docs)
    assert len(problems) == 1 and problems[0].startswith(
        "README.md quotes BCN00030 as 'removed backend http://10.0.0.5:8080 to "
        "balancer://cluster'"), problems


def test_self_check_a_file_missing_from_the_map_of_src_is_found():
    doc, files = read(DEVELOPMENT_DOC), src_files()
    assert not check_src_map(doc, files)
    assert "mod_proxy_beacon_worker.{c,h}" in doc
    without = doc.replace("mod_proxy_beacon_worker.{c,h}", "mod_proxy_beacon_worker.c", 1)
    assert check_src_map(without, files) == [
        "src/mod_proxy_beacon_worker.h is not on docs/development.md's map of src/"]
    assert check_src_map(doc, files + ["mod_proxy_beacon_new.c"]) == [
        "src/mod_proxy_beacon_new.c is not on docs/development.md's map of src/"]
    assert check_src_map(doc, [f for f in files if f != "mod_proxy_beacon_shm.c"]) == [
        "docs/development.md's map of src/ names src/mod_proxy_beacon_shm.c, "
        "which does not exist"]
    assert check_src_map(doc.replace(_SRC_MAP_START, "A picture of src/"), files) == [
        "docs/development.md has no map of src/ ('The map of src/')"]


def test_self_check_mod_proxy_h_included_outside_the_seam_rules_list_is_found():
    doc, sources = read(DEVELOPMENT_DOC), seam_sources()
    assert not check_seam(doc, sources)
    allowed = "src/mod_proxy_beacon_params.c, src/mod_proxy_beacon_worker.c"
    a_header = min(n for n in sources if n.startswith("include/"))
    for spelling in ('#include "mod_proxy.h"', "#include <mod_proxy.h>",
                     "  #  include\t< mod_proxy.h >", "#include <apache2/mod_proxy.h>"):
        for name in ("src/mod_proxy_beacon_balancer.c", "src/mod_proxy_beacon_worker.h",
                     "lib/beacon_table.c", a_header, "cli/beaconctl.c"):
            changed = dict(sources, **{name: sources[name] + "\n" + spelling + "\n"})
            expected = [f"{name} includes mod_proxy.h, which only {allowed} may "
                        "(docs/development.md's seam rule)"]
            if name.startswith(("lib/", "include/")):
                expected.append(f"{name} includes mod_proxy.h, an httpd header "
                                "(docs/development.md's seam rule)")
            assert check_seam(doc, changed) == expected, (spelling, name)
    # Words about mod_proxy.h are no include of it.
    name = "src/mod_proxy_beacon_balancer.c"
    assert not check_seam(doc, dict(sources, **{
        name: sources[name] + "\n/* #include <mod_proxy.h> */\n// #include \"mod_proxy.h\"\n"}))


def test_self_check_the_seam_rules_list_is_read_from_its_line_only():
    doc, sources = read(DEVELOPMENT_DOC), seam_sources()
    line = ("Files that may include mod_proxy.h: `src/mod_proxy_beacon_worker.c`, "
            "`src/mod_proxy_beacon_params.c`")
    assert mod_proxy_allowed(doc) == {"src/mod_proxy_beacon_worker.c",
                                      "src/mod_proxy_beacon_params.c"}
    assert check_seam(doc.replace(line, line.replace(", `src/mod_proxy_beacon_params.c`", "")),
                      sources) == [
        "src/mod_proxy_beacon_params.c includes mod_proxy.h, which only "
        "src/mod_proxy_beacon_worker.c may (docs/development.md's seam rule)"]
    assert check_seam(doc.replace(line, line + ", `src/mod_proxy_beacon_shm.c`"), sources) == [
        "docs/development.md's seam rule lets src/mod_proxy_beacon_shm.c include mod_proxy.h, "
        "which it does not"]
    assert check_seam(doc.replace(line, line + ", `src/mod_proxy_beacon_gone.c`"), sources) == [
        "docs/development.md's seam rule names src/mod_proxy_beacon_gone.c, which does not exist"]
    # The line outside its section, or the section gone: no list at all.
    no_list = ["docs/development.md's seam rule has no line "
               "'Files that may include mod_proxy.h: `...`'"]
    moved = without_line(doc, line) + "\n" + line + "\n"
    assert check_seam(moved, sources) == no_list
    assert check_seam(doc.replace("## " + SEAM_SECTION, "## The seams"), sources) == no_list


def test_self_check_an_httpd_header_in_libbeacon_is_found():
    doc, sources = read(DEVELOPMENT_DOC), seam_sources()
    name = "lib/beacon_table.c"
    for header in ("httpd.h", "http_log.h", "ap_mpm.h", "apache2/util_time.h", "mpm_common.h",
                   "scoreboard.h", "mod_watchdog.h"):
        changed = dict(sources, **{name: sources[name] + f"\n#include <{header}>\n"})
        assert check_seam(doc, changed) == [
            f"{name} includes {Path(header).name}, an httpd header "
            "(docs/development.md's seam rule)"], header
    for header in ("apr_strings.h", "apu.h", "apr_thread_proc.h", "beacon_private.h",
                   "stdatomic.h"):
        a_header = min(n for n in sources if n.startswith("include/"))
        changed = dict(sources, **{a_header: sources[a_header] + f'\n#include "{header}"\n'})
        assert not check_seam(doc, changed), header
    # The adapter may: it is the httpd side of the seam.
    assert "httpd.h" in included_headers(sources["src/mod_proxy_beacon_status_html.c"])
