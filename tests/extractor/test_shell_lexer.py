from driftmatrix.extractor.shell_lexer import Operator, Word, lex


def words(text):
    return [t.text for t in lex(text).tokens if isinstance(t, Word)]


def test_continuation_joins_lines_and_counts_them():
    result = lex("vllm serve m \\\n  --port 8000\nnext")
    ws = [t for t in result.tokens if isinstance(t, Word)]
    assert [w.text for w in ws] == ["vllm", "serve", "m", "--port", "8000", "next"]
    assert [w.line for w in ws] == [0, 0, 0, 1, 1, 2]
    assert result.lints == []


def test_backslash_followed_by_spaces_is_assumed_continuation_with_a_lint():
    result = lex("vllm serve m \\   \n  --port 8000")
    assert words("vllm serve m \\   \n  --port 8000") == ["vllm", "serve", "m", "--port", "8000"]
    assert [(lint.code, lint.line) for lint in result.lints] == [("backslash-not-continuation", 0)]
    assert "trailing spaces" in result.lints[0].message


def test_comment_after_continuation_is_dropped_and_linted():
    result = lex("vllm serve m \\   # the model\n  --port 8000   # port\n")
    assert words("vllm serve m \\   # the model\n  --port 8000   # port\n") == ["vllm", "serve", "m", "--port", "8000"]
    assert "a comment" in result.lints[0].message


def test_hash_inside_a_word_is_not_a_comment():
    assert words("vllm serve m --served-model-name a#b # real comment") == [
        "vllm",
        "serve",
        "m",
        "--served-model-name",
        "a#b",
    ]


def test_ansi_c_quoting_decodes_escapes_and_spans_lines():
    ws = words('x $\'{"a": 1,\n "b": "it\\\'s\\x41\\n"}\' y')
    assert ws == ["x", '{"a": 1,\n "b": "it\'sA\n"}', "y"]


def test_expansions_only_outside_single_quotes():
    tokens = [t for t in lex("a \"$HOST:${PORT}\" '$LITERAL' $(hostname) `date`").tokens if isinstance(t, Word)]
    assert [t.expansions for t in tokens] == [[], ["$HOST", "${PORT}"], [], ["$(hostname)"], ["`date`"]]
    assert tokens[2].text == "$LITERAL"


def test_double_quote_escapes():
    assert words(r'"a \"b\" \$c \\ d\n"') == ['a "b" $c \\ d\\n']


def test_unbalanced_quote_is_reported_not_raised():
    result = lex('vllm serve m --x \'{"a": 1}\n--port 1')
    assert result.unterminated and "line 1" in result.unterminated
    assert [lint.code for lint in result.lints] == ["unbalanced-quote"]


def test_operators_and_redirections():
    tokens = lex("a && b | tee log 2>&1 &\nc; d").tokens
    ops = [t.op for t in tokens if isinstance(t, Operator)]
    assert ops == ["&&", "|", ">&", "&", "\n", ";"]
    assert words("a && b | tee log 2>&1 &\nc; d") == ["a", "b", "tee", "log", "1", "c", "d"]


def test_placeholders_are_single_words_not_redirections():
    assert words("vllm serve <MODEL NAME> --x {your model dir} --y ${HOME}") == [
        "vllm",
        "serve",
        "<MODEL NAME>",
        "--x",
        "{your model dir}",
        "--y",
        "${HOME}",
    ]


def test_heredoc_body_is_not_lexed_as_commands():
    assert words("cat <<EOF > c.yaml\nvllm serve inside\nEOF\nvllm serve after") == [
        "cat",
        "EOF",
        "c.yaml",
        "vllm",
        "serve",
        "after",
    ]  # redirection targets are words too


def test_heredoc_bodies_are_kept_as_data():
    result = lex("cat <<EOF | kubectl apply -f -\nkind: Pod\nargs: [x]\nEOF\necho")
    assert result.heredocs == [(1, "kind: Pod\nargs: [x]")]
