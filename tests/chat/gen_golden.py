#!/usr/bin/python3
"""Renders the chat templates in tests/chat/templates/ (and the interpreter unit cases below)
with Python's jinja2 configured exactly as transformers' apply_chat_template configures it, and
writes the results as golden JSON files that the C++ tests compare against byte for byte.

transformers (src/transformers/utils/chat_template_utils.py, _compile_jinja_template) uses
    ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                  extensions=[AssistantTracker, jinja2.ext.loopcontrols])
with the filter tojson replaced by json.dumps(x, ensure_ascii=False, indent=indent,
separators=separators, sort_keys=sort_keys) and the globals raise_exception (raises
TemplateError) and strftime_now, and renders with messages=..., tools=None, documents=None,
add_generation_prompt=..., plus the tokenizer's special tokens (bos_token, eos_token, ...) and
any extra kwargs (e.g. enable_thinking). transformers' AssistantTracker extension adds the
{% generation %} tag (a call block that renders its body; it only records offsets when asked for
an assistant mask); GenerationTag below behaves the same for rendering.

Usage:
    gen_golden.py [--out DIR]            write goldens (default: tests/chat/golden next to this file)
    gen_golden.py --out DIR --compare REF_DIR
                                         write into DIR, then fail (exit 1) if any file differs
                                         from REF_DIR (CTest uses this so goldens cannot drift)
Requires Debian's python3-jinja2 (run it with /usr/bin/python3; the goldens record the jinja2
version). Exits 77 (CTest's skip code) when jinja2 cannot be imported.
"""
import argparse
import datetime
import hashlib
import json
import os
import sys
import warnings

try:
    import jinja2
    import jinja2.ext
    import jinja2.sandbox
except ImportError as exc:  # pragma: no cover
    print("gen_golden.py: cannot import jinja2 (install Debian's python3-jinja2):", exc,
          file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE_DIR = os.path.join(HERE, "templates")

# Special tokens as each model's tokenizer_config.json declares them (None: absent/null, so the
# template sees an undefined variable, as with transformers).
TEMPLATES = {
    "olmoe": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
    "qwen2moe": {"bos_token": None, "eos_token": "<|im_end|>"},
    "qwen3moe": {"bos_token": None, "eos_token": "<|im_end|>"},
    "mixtral": {"bos_token": "<s>", "eos_token": "</s>"},
    "mixtral_2023": {"bos_token": "<s>", "eos_token": "</s>"},
    "granitemoe": {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>"},
    "deepseekv2": {"bos_token": "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                   "eos_token": "<\uff5cend\u2581of\u2581sentence\uff5c>"},
    "deepseekv3": {"bos_token": "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
                   "eos_token": "<\uff5cend\u2581of\u2581sentence\uff5c>",
                   # DeepSeek-V3 joins several system messages with a blank line (is_first_sp).
                   "extra_conversations": [
                       ("two_system_messages", [
                           {"role": "system", "content": "First rule."},
                           {"role": "user", "content": "Hi"},
                           {"role": "system", "content": "Second rule."},
                           {"role": "assistant", "content": "Hello."},
                           {"role": "user", "content": "Bye"},
                       ], {}),
                   ]},
}


def msg(role, content):
    return {"role": role, "content": content}


UNICODE_TEXT = "  Grüße, 世界! 🙂\tcafé\u3000\n\nline two with trailing spaces   \n"

CONVERSATIONS = [
    ("system_multi_turn", [
        msg("system", "You are a helpful assistant."),
        msg("user", "Hello!"),
        msg("assistant", "Hi there. How can I help?"),
        msg("user", "What is a mixture of experts?"),
    ], {}),
    ("system_ending_with_assistant", [
        msg("system", "Be brief."),
        msg("user", "Name a colour."),
        msg("assistant", "Blue."),
    ], {}),
    ("no_system", [
        msg("user", "First question"),
        msg("assistant", "First answer"),
        msg("user", "Second question"),
    ], {}),
    ("single_user", [msg("user", "Hi")], {}),
    ("unicode_whitespace", [
        msg("system", "\n  System with leading newline and spaces  "),
        msg("user", UNICODE_TEXT),
        msg("assistant", "  answer with spaces  \n"),
        msg("user", "{{ not a template }} {% neither %} and 'quotes' \"double\" \\ backslash"),
    ], {}),
    ("empty_contents", [msg("system", ""), msg("user", ""), msg("assistant", ""),
                        msg("user", "")], {}),
    ("long_multi_turn", [m for i in range(5) for m in (
        msg("user", "question %d" % i), msg("assistant", "answer %d" % i))] +
        [msg("user", "last")], {}),
    ("reasoning_history", [
        msg("user", "2+2?"),
        msg("assistant", "<think>\nSimple arithmetic.\n</think>\n\n4"),
        msg("user", "3+3?"),
    ], {}),
    ("thinking_disabled", [msg("user", "Quick answer please")], {"enable_thinking": False}),
    ("thinking_enabled", [msg("user", "Think first")], {"enable_thinking": True}),
    ("tool_response", [
        msg("user", "What is the weather?"),
        msg("assistant", "Let me check."),
        msg("tool", "{\"temp\": 21}"),
        msg("tool", "{\"sky\": \"clear\"}"),
        msg("user", "Thanks"),
    ], {}),
    ("roles_not_alternating", [msg("user", "one"), msg("user", "two")], {}),
    ("unknown_role", [msg("user", "hi"), msg("narrator", "Meanwhile...")], {}),
    ("empty_conversation", [], {}),
]


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: renders the body in a call block."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_render", [])
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols])

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.now().strftime(format)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, variables):
    """Returns {"expected": text} or {"error": kind, "message": text}."""
    try:
        return {"expected": env.from_string(source).render(**variables)}
    except jinja2.exceptions.UndefinedError as e:
        return {"error": "UndefinedError", "message": str(e)}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"error": "TemplateSyntaxError", "message": str(e)}
    except jinja2.exceptions.TemplateError as e:
        if type(e) is jinja2.exceptions.TemplateError:  # raise_exception()
            return {"error": "TemplateError", "message": str(e)}
        # FilterArgumentError, SecurityError...: runtime type errors
        return {"error": "TypeError", "message": "%s: %s" % (type(e).__name__, e)}
    except (TypeError, ValueError, ArithmeticError) as e:
        return {"error": "TypeError", "message": "%s: %s" % (type(e).__name__, e)}


def template_goldens(env):
    out = {}
    for name, tokens in TEMPLATES.items():
        path = os.path.join(TEMPLATE_DIR, name + ".jinja")
        with open(path, "rb") as f:
            raw = f.read()
        source = raw.decode("utf-8")
        cases = []
        for conv_name, messages, extra in CONVERSATIONS + tokens.get("extra_conversations", []):
            for agp in (True, False):
                variables = {"messages": messages, "tools": None, "documents": None,
                             "add_generation_prompt": agp}
                for k in ("bos_token", "eos_token"):
                    if tokens[k] is not None:
                        variables[k] = tokens[k]
                variables.update(extra)
                case = {"name": "%s/%s" % (conv_name, "gen" if agp else "nogen"),
                        "messages": messages, "add_generation_prompt": agp}
                if "enable_thinking" in extra:
                    case["enable_thinking"] = extra["enable_thinking"]
                case.update(render(env, source, variables))
                cases.append(case)
        out[name + ".json"] = {
            "generator": "tests/chat/gen_golden.py",
            "jinja2_version": jinja2.__version__,
            "environment": "ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, "
                           "extensions=[loopcontrols]); tojson=json.dumps(ensure_ascii=False); "
                           "raise_exception",
            "template": "templates/%s.jinja" % name,
            "template_sha256": hashlib.sha256(raw).hexdigest(),
            "bos_token": tokens["bos_token"],
            "eos_token": tokens["eos_token"],
            "cases": cases,
        }
    return out


MSGS = [msg("system", " sys "), msg("user", "u1"), msg("assistant", "a1"),
        {"role": "assistant", "content": "", "tool_calls": [{"name": "f"}]},
        msg("tool", "t1"), msg("user", "u2")]

# Interpreter unit cases: (name, template, variables). Expectations come from jinja2.
UNIT_CASES = [
    # whitespace control
    ("trim_blocks", "{% if true %}\nA\n{% endif %}\nB", {}),
    ("lstrip_blocks", "  {% if true %}\n  A\n  {% endif %}\n  B", {}),
    ("lstrip_not_for_variables", "  {{ 'x' }}\n  y", {}),
    ("minus_both_sides", "a  \n  {%- if true -%}  \n  b  \n  {%- endif -%}\n  c", {}),
    ("minus_variable", "a \n {{- 'b' -}} \n c", {}),
    ("plus_disables_lstrip", "  {%+ if true %}x{% endif %}", {}),
    ("plus_disables_trim", "{% if true +%}\nx{% endif %}", {}),
    ("comment_lstrip_trim", "a\n  {# note #}\nb {#- c -#} d", {}),
    ("trailing_newline_dropped", "x\n", {}),
    ("only_one_trailing_newline_dropped", "x\n\n", {}),
    ("crlf_normalized", "a\r\nb\rc", {}),
    ("lstrip_after_text_on_line", "x {% if true %}y{% endif %}", {}),
    ("newline_after_variable_kept", "{{ 1 }}\n{{ 2 }}", {}),
    ("unicode_space_stripped_by_minus", "a\u3000 {{- 'b' }}", {}),
    # loops
    ("loop_vars", "{% for x in ['a','b','c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
     "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {}),
    ("loop_filter", "{% for x in [1,2,3,4,5] if x is odd %}{{ x }}:{{ loop.index }}/{{ loop.length }}"
     " {% endfor %}", {}),
    ("loop_else", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("loop_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
     "{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("loop_dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}",
     {"d": {"b": 1, "a": 2}}),
    ("loop_over_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("loop_over_string", "{% for c in 'héllo' %}[{{ c }}]{% endfor %}", {}),
    ("loop_prev_next", "{% for x in [1,2,3] %}{{ loop.previtem }}-{{ loop.nextitem }} {% endfor %}", {}),
    ("loop_cycle", "{% for x in range(4) %}{{ loop.cycle('a','b','c') }}{% endfor %}", {}),
    ("nested_loops", "{% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} "
     "{% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("set_scoped_to_iteration", "{% set x = 5 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}"
     "{% endfor %}{{ x }}", {}),
    ("set_in_if_visible", "{% if true %}{% set y = 3 %}{% endif %}{{ y }}", {}),
    ("loop_var_restored", "{% set i = 9 %}{% for i in [1] %}{{ i }}{% endfor %}{{ i }}", {}),
    # namespace
    ("namespace", "{% set ns = namespace(count=0, found=false) %}{% for x in [1,2,3] %}"
     "{% set ns.count = ns.count + x %}{% if x == 2 %}{% set ns.found = true %}{% endif %}"
     "{% endfor %}{{ ns.count }} {{ ns.found }}", {}),
    ("namespace_late_attr", "{% set ns = namespace() %}{% set ns.a = 'v' %}{{ ns.a }}", {}),
    ("block_set", "{% set x %}a{{ 1 + 1 }}b{% endset %}[{{ x }}]", {}),
    ("tuple_set", "{% set a, b = [1, 2] %}{{ b }}{{ a }}", {}),
    # expressions
    ("arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 1 / 4 }} {{ 2 ** 10 }} "
     "{{ 2.5 * 2 }} {{ 3 - 5 }} {{ -(3) }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 10 / 5 }}", {}),
    ("float_repr", "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 1e-5 }} "
     "{{ 0.0001 }} {{ 1.5e-7 }} {{ 123456.789 }} {{ -0.0 }} {{ 2.0 ** 70 }}", {}),
    ("string_ops", "{{ 'a' + 'b' }} {{ 'x' ~ 1 ~ none ~ true }} {{ 'ab' * 3 }} "
     "{{ 'abc'[1] }} {{ 'abc'[-1] }} {{ 'héllo'[1:3] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[::2] }} "
     "{{ 'abcdef'[-2:] }} {{ 'abcdef'[:-2] }} {{ 'abcdef'[4:1:-1] }}", {}),
    ("list_ops", "{{ [1,2,3][-1] }} {{ [1,2,3][1:] }} {{ [1,2] + [3] }} {{ [1,2,3][::-1] }} "
     "{{ [] }} {{ [1, 'a', none, true, 1.5] }} {{ ('t', 1) }}", {}),
    ("dict_literal", "{{ {'a': 1, 'b': [1, 'x']} }} {{ {'q': \"it's\"} }}", {}),
    ("comparisons", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} "
     "{{ 'a' != 'a' }} {{ 2 >= 2 }} {{ none == none }} {{ [1,2] == [1,2] }}", {}),
    ("membership", "{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'cat' }} "
     "{{ 3 not in [1,2] }}", {}),
    ("logic", "{{ 1 and 'x' }}|{{ 0 and 'x' }}|{{ '' or 'y' }}|{{ 'a' or 'b' }}|{{ not 0 }}|"
     "{{ not 'a' }}|{{ none or [] }}", {}),
    ("conditional_expr", "{{ 'y' if true else 'n' }} {{ 'y' if false else 'n' }} [{{ 'y' if false }}]", {}),
    ("adjacent_strings", "{{ 'a' 'b' \"c\" }}", {}),
    ("string_escapes", "{{ 'tab\\there' }}|{{ \"q\\\"q\" }}|{{ 'nl\\nx' }}|{{ '\\u00e9\\x41' }}|"
     "{{ 'back\\\\slash' }}|{{ 'keep\\d' }}", {}),
    ("literals", "{{ true }} {{ false }} {{ none }} {{ True }} {{ None }} {{ 1_000 }} {{ 0.5 }}", {}),
    ("undefined_renders_empty", "[{{ nothing }}][{{ nothing ~ 'x' }}][{{ nothing | length }}]"
     "[{{ not nothing }}][{% for x in nothing %}x{% endfor %}]", {}),
    ("undefined_attr_of_defined", "[{{ d.missing }}][{{ d['missing'] }}][{{ l[5] }}]",
     {"d": {"a": 1}, "l": [1]}),
    ("attribute_vs_item", "{{ d.a }} {{ d['a'] }} {{ l.0 }} {{ d.items() | list }}",
     {"d": {"a": 1}, "l": ["z"]}),
    ("precedence_filter_vs_minus", "{{ l|length - 1 }} {{ -1|abs }} {{ -l|length }}", {"l": [1, 2, 3]}),
    # filters
    ("filter_trim", "[{{ '  a b \\n'|trim }}][{{ 'xxaxx'|trim('x') }}][{{ '\u3000a\u00a0'|trim }}]", {}),
    ("filter_length", "{{ 'héllo'|length }} {{ [1,2]|length }} {{ {'a':1}|length }} {{ 'x'|count }}", {}),
    ("filter_tojson", "{{ d|tojson }}|{{ 'é\"\\n<'|tojson }}|{{ [1, 2.5, none, true]|tojson }}",
     {"d": {"b": 1, "a": [1, {"x": "y"}], "u": "ü🙂"}}),
    ("filter_tojson_indent", "{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|"
     "{{ d|tojson(separators=[',', ':']) }}|{{ d|tojson(ensure_ascii=true) }}|{{ []|tojson(indent=2) }}",
     {"d": {"b": 1, "a": [1, {}], "u": "ü🙂"}}),
    ("filter_string", "{{ 1|string }} {{ none|string }} {{ [1,'a']|string }} [{{ nothing|string }}]", {}),
    ("filter_default", "{{ nothing|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} "
     "{{ 0|d('z', boolean=true) }} {{ none|default('n') }}", {}),
    ("filter_first_last", "{{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ 'abc'|first }} {{ 'abc'|last }}", {}),
    ("filter_case", "{{ 'Hello World'|upper }} {{ 'Hello World'|lower }} {{ 'hello WORLD'|capitalize }} "
     "{{ 'hello big-world (x'|title }}", {}),
    ("filter_join", "{{ ['a','b','c']|join(', ') }} {{ [1,2]|join }} {{ 'abc'|join('-') }}", {}),
    ("filter_replace", "{{ 'aaa'|replace('a','b') }} {{ 'aaa'|replace('a','b',2) }} {{ 'ab'|replace('','-') }}", {}),
    ("filter_items", "{% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}", {"d": {"x": 1, "y": 2}}),
    ("filter_list_reverse", "{{ 'abc'|list }} {{ [1,2,3]|reverse|list }} {{ 'abc'|reverse }}", {}),
    ("filter_int_float_abs", "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} "
     "{{ '2.5'|float }} {{ 'x'|float }} {{ -3|abs }} {{ -2.5|abs }}", {}),
    ("filter_chain", "{{ '  Hi  '|trim|upper|replace('I', 'i')|length }}", {}),
    # tests
    ("tests_types", "{{ 'a' is string }} {{ 1 is string }} {{ 1 is number }} {{ true is number }} "
     "{{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ none is none }} "
     "{{ {} is mapping }} {{ [] is iterable }} {{ 'a' is sequence }} {{ 1 is iterable }}", {}),
    ("tests_defined", "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ x is not none }} "
     "{{ none is not none }}", {"x": 1}),
    ("tests_values", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} "
     "{{ true is true }} {{ 1 is true }} {{ false is false }} {{ 2 is eq 2 }} {{ 2 is ne 2 }} "
     "{{ 1 is lt 2 }} {{ 2 is gt(3) }} {{ 2 is in [1,2] }}", {}),
    # string methods
    ("str_methods", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x','lo')) }} "
     "[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}][{{ 'xxhixx'.strip('x') }}] "
     "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} "
     "{{ 'abcb'.replace('b','X') }} {{ 'Ab'.upper() }} {{ 'Ab'.lower() }} {{ 'hello'.find('l') }} "
     "{{ 'hello'.count('l') }} {{ '-'.join(['a','b']) }} {{ 'hello'.title() if false else 'ok' }}", {}),
    ("str_split_index", "{{ 'a</think>b</think>c'.split('</think>')[-1] }}|"
     "{{ '\\n\\nx\\n'.lstrip('\\n') }}|{{ 'x\\n\\n'.rstrip('\\n') }}", {}),
    ("dict_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys()|list }} "
     "{{ d.values()|list }}", {"d": {"a": 1, "b": 2}}),
    ("globals_range_dict", "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} "
     "{{ dict(a=1, b='x') }}", {}),
    # select / reject / map (lazy generators in jinja2)
    ("selectattr_list", "{{ msgs|selectattr('role', 'equalto', 'user')|list|length }} "
     "{{ (msgs|selectattr('role', 'eq', 'user')|list)[-1].content }}", {"msgs": MSGS}),
    ("rejectattr_loop", "{% for m in msgs|rejectattr('role', 'eq', 'system') %}{{ m.role }},"
     "{{ loop.index }};{% endfor %}", {"msgs": MSGS}),
    ("selectattr_undefined", "{{ msgs|selectattr('tool_calls', 'undefined')|map(attribute='role')"
     "|join(',') }}|{{ msgs|selectattr('tool_calls')|list }}", {"msgs": MSGS}),
    ("select_truthiness", "{{ [0, 1, '', 2, none]|select|list }} {{ [0, 1, '', 2]|reject|list }} "
     "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3]|reject('in', [2])|list }}", {}),
    ("map_filter_and_attribute", "{{ ['a', 'b']|map('upper')|join }} {{ msgs|map(attribute='nope', "
     "default='d')|list }} {{ [{'f': {'n': 'x'}}]|map(attribute='f.n')|list }} "
     "{{ [' a ', 'b ']|map('trim')|list }}", {"msgs": MSGS}),
    ("generator_truthy_and_once", "{{ 'yes' if ([]|select) else 'no' }} {% set g = [1, 2]|select %}"
     "{{ g|list }}{{ g|list }} {{ [3, 1]|select|reverse|list }} {{ [1, 2]|select|first }}", {}),
    ("generation_block", "{% for m in msgs %}{% generation %}<{{ m.content }}>{% set x = 1 %}"
     "{% endgeneration %}{% endfor %}[{{ x }}]", {"msgs": MSGS}),
    ("strftime_now_literal", "{{ strftime_now('no directives here') }}", {}),
    ("realistic_idioms", "{% set loop_messages = (msgs[0].role == 'system' and msgs[1:] or msgs) %}"
     "{% for m in loop_messages if m.role != 'tool' %}{{ m.content|trim + '|' }}"
     "{{ '\n' if not loop.last }}{% endfor %}{% if not tools is none %}T{% endif %}"
     "{% set c = msgs[0]['content'] if msgs[0]['content'] is string else '' %}[{{ c }}]"
     "{{ msgs|length > 2 }}", {"msgs": MSGS, "tools": None}),
    # errors with a jinja2 counterpart
    ("error_generator_length", "{{ ([1]|select)|length }}", {}),
    ("error_generator_last", "{{ [1]|select|last }}", {}),
    ("error_raise_exception", "{{ raise_exception('custom failure: ' ~ 42) }}", {}),
    ("error_undefined_attr", "{{ messages[0].role }}", {"messages": []}),
    ("error_undefined_arith", "{{ nothing + 1 }}", {}),
    ("error_str_plus_int", "{{ 'a' + 1 }}", {}),
    ("error_iterate_none", "{% for x in none %}{% endfor %}", {}),
    ("error_division_by_zero", "{{ 1 // 0 }}", {}),
    ("error_syntax_unclosed_if", "{% if true %}x", {}),
    ("error_syntax_bad_expression", "{{ 1 + }}", {}),
]


# Random templates stressing whitespace control and scoping, from a fixed seed. Every construct
# is in the supported subset; jinja2 decides the expected output (or error).
FUZZ_SEED = 20261201
FUZZ_COUNT = 600
EXPR_FUZZ_COUNT = 1000
FUZZ_TEXT = ["", " ", "  ", "\t", "\n", " \n", "\n  ", "x", "a b", "\n\n", "  y  \n", "é",
             "\u3000", " \t\n\t ", "z\n   ", "} }", "\r\n", "%}", "#}"]
FUZZ_EXPR = ["1", "'s'", "x", "v", "loop.index", "1 + 2", "'a' ~ v", "[1, 2]|length", "none",
             "true", "'  pad '|trim", "v ~ 'k'", "x * 2", "'q' if v else 'r'", "[x, v]",
             "ns.n", "(v or 'd')|upper", "'abc'[x:]", "-x", "x // 2", "'%}'", "\"}}\"",
             "'{#'", "{'a': {'b': x}}", "'-'", "x - -1", "[v]|tojson"]
FUZZ_COND = ["true", "false", "v is defined", "x == 1", "not v", "x is odd", "loop.first",
             "ns.n > 1", "'a' in 'cat'"]


def fuzz_template(rng, depth=0):
    def ctl(allow_plus):
        return rng.choice(["", "", "-", "+"] if allow_plus else ["", "", "-"])

    def block(body_text):
        return "{%" + ctl(True) + " " + body_text + " " + ctl(True) + "%}"

    parts = []
    for _ in range(rng.randint(1, 5)):
        parts.append(rng.choice(FUZZ_TEXT))
        kind = rng.randint(0, 9 if depth < 2 else 4)
        if kind <= 2:
            parts.append("{{" + ctl(False) + " " + rng.choice(FUZZ_EXPR) + " " + ctl(False) + "}}")
        elif kind == 3:
            parts.append("{#" + ctl(True) + " c " + ctl(True) + "#}")
        elif kind == 4:
            parts.append(block("set v = " + rng.choice(FUZZ_EXPR)))
        elif kind in (5, 6):
            parts.append(block("if " + rng.choice(FUZZ_COND)))
            parts.append(fuzz_template(rng, depth + 1))
            if rng.random() < 0.5:
                parts.append(block("else"))
                parts.append(fuzz_template(rng, depth + 1))
            parts.append(block("endif"))
        elif kind in (7, 8):
            seq = rng.choice(["[1, 2, 3]", "range(2)", "[]", "'ab'", "([3, 1] if v else [2])",
                              "[1, 2, 3]", "range(3)", "[4]"] + (["[3] if v else [2]"]
                                                                   if rng.random() < 0.1 else []))
            filt = rng.choice(["", "", " if x != 2"])
            parts.append(block("for x in " + seq + filt))
            parts.append(fuzz_template(rng, depth + 1))
            if rng.random() < 0.3:
                parts.append(block("set ns.n = ns.n + 1"))
            if rng.random() < 0.2:
                parts.append(block(rng.choice(["break", "continue"])))
            parts.append(block("endfor"))
        else:
            parts.append(block("set ns.n = ns.n + x") if rng.random() < 0.5
                         else block("set x = x + 1"))
    parts.append(rng.choice(FUZZ_TEXT))
    return "".join(parts)


EXPR_ATOMS = ["0", "1", "2", "3", "-1", "10", "0.5", "2.0", "1e3", "-1.5", "'a'", "'héllo'",
              "' x '", "''", "'a b c'", "none", "true", "false", "[1, 'a']", "[]", "[3, 1, 2]",
              "{'k': 'v'}", "u", "n", "s", "l", "d", "(1, 2)"]
EXPR_POSTFIX_ATOMS = ["'a'", "'héllo'", "' x '", "''", "'a b c'", "[1, 'a']", "[]", "[3, 1, 2]",
                      "u", "n", "s", "l", "d", "(1, 2)"]
EXPR_BINOPS = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in",
               "not in", "and", "or"]
EXPR_FILTERS = ["length", "string", "trim", "upper", "lower", "first", "last", "default('z')",
                "join('-')", "tojson", "list", "reverse|list", "int", "float", "abs", "capitalize",
                "title", "items|list", "count", "d('w', true)", "replace('a', 'X')"]
EXPR_TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "odd",
              "even", "mapping", "iterable", "sequence", "boolean", "true", "false",
              "divisibleby 2", "eq 1", "in [1, 2]", "callable"]
EXPR_POSTFIX = ["[0]", "[-1]", "[1:]", "[::-1]", ".k", "['k']", ".strip()", ".split()",
                ".upper()", ".startswith('a')", ".endswith('c')", ".replace('a', 'b')",
                ".items()", ".get('k')", ".split(' ', 1)", ".lstrip('a')", ".keys()"]


def fuzz_expr(rng, depth=0):
    r = rng.random()
    if depth >= 3 or r < 0.3:
        return rng.choice(EXPR_ATOMS)
    if r < 0.55:
        op = rng.choice(EXPR_BINOPS)
        return "(%s %s %s)" % (fuzz_expr(rng, depth + 1), op, fuzz_expr(rng, depth + 1))
    if r < 0.65:
        return "%s|%s" % (fuzz_expr(rng, depth + 1), rng.choice(EXPR_FILTERS))
    if r < 0.72:
        neg = "not " if rng.random() < 0.3 else ""
        return "(%s is %s%s)" % (fuzz_expr(rng, depth + 1), neg, rng.choice(EXPR_TESTS))
    if r < 0.82:
        # No number/bool/none/dict literals here: jinja2 constant-folds e.g. "1[1:]" through its
        # lenient getitem (undefined) but runs "n[1:]" as a plain subscript (TypeError).
        return "%s%s" % (rng.choice(EXPR_POSTFIX_ATOMS), rng.choice(EXPR_POSTFIX))
    if r < 0.88:
        return "(%s if %s else %s)" % (fuzz_expr(rng, depth + 1), fuzz_expr(rng, depth + 1),
                                       fuzz_expr(rng, depth + 1))
    if r < 0.94:
        return "(not %s)" % fuzz_expr(rng, depth + 1)
    return "-%s" % fuzz_expr(rng, depth + 1)


def fuzz_expr_goldens(env):
    import random
    rng = random.Random(FUZZ_SEED + 1)
    variables = {"n": 3, "s": "str", "l": [1, "a"], "d": {"k": "v"}}
    cases = []
    for i in range(EXPR_FUZZ_COUNT):
        source = "{{ %s }}" % fuzz_expr(rng)
        case = {"name": "expr_%03d" % i, "template": source, "variables": variables}
        case.update(render(env, source, variables))
        cases.append(case)
    return {"fuzz_expr_cases.json": {
        "generator": "tests/chat/gen_golden.py (seed %d)" % (FUZZ_SEED + 1),
        "jinja2_version": jinja2.__version__,
        "cases": cases,
    }}


def fuzz_goldens(env):
    import random
    rng = random.Random(FUZZ_SEED)
    cases = []
    for i in range(FUZZ_COUNT):
        body = fuzz_template(rng)
        source = "{% set ns = namespace(n=0) %}" + body
        variables = {} if i % 4 == 3 else {"x": 1 + i % 3}
        case = {"name": "fuzz_%03d" % i, "template": source, "variables": variables}
        case.update(render(env, source, variables))
        cases.append(case)
    return {"fuzz_cases.json": {
        "generator": "tests/chat/gen_golden.py (seed %d)" % FUZZ_SEED,
        "jinja2_version": jinja2.__version__,
        "cases": cases,
    }}


def unit_goldens(env):
    cases = []
    for name, source, variables in UNIT_CASES:
        case = {"name": name, "template": source, "variables": variables}
        case.update(render(env, source, variables))
        cases.append(case)
    return {"unit_cases.json": {
        "generator": "tests/chat/gen_golden.py",
        "jinja2_version": jinja2.__version__,
        "cases": cases,
    }}


def main():
    # Python warns when jinja2 compiles a literal like "1[0]"; the render result is what counts.
    warnings.simplefilter("ignore", SyntaxWarning)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden"))
    ap.add_argument("--compare", help="directory with the checked-in goldens to diff against")
    args = ap.parse_args()
    env = make_env()
    files = {}
    files.update(template_goldens(env))
    files.update(unit_goldens(env))
    files.update(fuzz_goldens(env))
    files.update(fuzz_expr_goldens(env))
    os.makedirs(args.out, exist_ok=True)
    for fname, data in files.items():
        with open(os.path.join(args.out, fname), "w", encoding="utf-8", newline="\n") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.write("\n")
    if args.compare:
        bad = []
        for fname in files:
            with open(os.path.join(args.out, fname), "rb") as a:
                fresh = a.read()
            ref_path = os.path.join(args.compare, fname)
            if not os.path.exists(ref_path):
                bad.append(fname + " (missing from " + args.compare + ")")
                continue
            with open(ref_path, "rb") as b:
                if b.read() != fresh:
                    bad.append(fname)
        extra = sorted(set(os.listdir(args.compare)) - set(files))
        bad += [f + " (stale: not produced by the generator)" for f in extra if f.endswith(".json")]
        if bad:
            print("goldens differ from a fresh run (regenerate with tests/chat/gen_golden.py):",
                  ", ".join(bad), file=sys.stderr)
            return 1
        print("goldens match a fresh run with jinja2", jinja2.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
