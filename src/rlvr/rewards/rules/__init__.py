"""The one-rule modules: each is the one place a class of hole is closed (DESIGN.md, "One rule per
class of hole"), used by every verifier, the audit, the episodes and the reward server.

- ``untrusted``: untrusted text (strip, lines, case, width folding, the invisible set) by Unicode
  properties, never Python's ``str`` defaults;
- ``patterns``: patterns on model text and request bodies run on RE2, in linear time;
- ``strictjson``: the one strict JSON reader (duplicate keys refused, exact numbers, depth and
  digit limits);
- ``jsonrules``: JSON Schema as the JSON terms apply it (extra keys forbidden, formats enforced,
  linear patterns, exact numbers);
- ``codeattacks``: the attack list ``rlvr sandbox check`` runs through a ``unit_tests`` term.

They import nothing from the rest of ``rlvr`` but each other and ``rlvr.errors`` (the attack
list: the verifier types it runs through), so a rule never depends on a verifier it constrains.
"""
