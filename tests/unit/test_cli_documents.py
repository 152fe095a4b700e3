"""Files are parsed as YAML documents, as kubectl does, not split on the text ``---`` as vcctl did."""

import io

import pytest

from kubectl_jobflow.documents import DocumentError, parse, read


def test_three_dashes_inside_a_value_do_not_split_a_document():
    [doc] = parse("""
kind: JobTemplate
metadata: {name: a, annotations: {note: "before --- after"}}
spec:
  tasks:
  - name: main
    template:
      spec:
        containers:
        - name: main
          command:
          - sh
          - -c
          - |
            echo start
            ---
            echo end
""", source="f.yaml")
    assert doc.body["metadata"]["annotations"]["note"] == "before --- after"
    assert "---" in doc.body["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][2]


def test_documents_keep_their_file_position_and_empty_ones_are_skipped():
    docs = parse("---\nkind: JobFlow\nmetadata: {name: x}\n---\n---\n# only a comment\n---\nkind: JobTemplate\n"
                 "metadata: {name: y}\n", source="f.yaml")
    assert [(doc.source, doc.kind, doc.name) for doc in docs] == [
        ("f.yaml#1", "JobFlow", "x"), ("f.yaml#4", "JobTemplate", "y")]


def test_a_list_stands_for_its_items_as_kubectl_get_prints_them():
    docs = parse('{"kind": "List", "items": [{"kind": "JobFlow", "metadata": {"name": "x"}}]}', source="l.json")
    assert [(doc.source, doc.name) for doc in docs] == [("l.json#1.items[0]", "x")]


def test_a_file_that_does_not_parse_is_reported_with_its_line_and_column():
    with pytest.raises(DocumentError, match=r"^f.yaml is not valid YAML at line 3, column 8: mapping values are not "
                                            r"allowed here$"):
        parse("kind: JobFlow\nmetadata: {name: a}\nspec: x: y\n", source="f.yaml")


def test_a_document_that_is_not_an_object_is_refused():
    with pytest.raises(DocumentError, match=r"f.yaml#1 is a list, not an object"):
        parse("- a\n- b\n", source="f.yaml")


def test_a_directory_means_its_yaml_and_json_files_in_name_order(tmp_path):
    (tmp_path / "b.yaml").write_text("kind: JobFlow\nmetadata: {name: second}\n")
    (tmp_path / "a.json").write_text('{"kind": "JobTemplate", "metadata": {"name": "first"}}')
    (tmp_path / "notes.txt").write_text("kind: ignored\n")
    assert [doc.name for doc in read([str(tmp_path)])] == ["first", "second"]


def test_dash_reads_standard_input(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: JobFlow\nmetadata: {name: piped}\n"))
    [doc] = read(["-"])
    assert (doc.source, doc.name) == ("<stdin>#1", "piped")


def test_a_missing_file_is_reported_plainly(tmp_path):
    with pytest.raises(DocumentError, match=r"cannot read .*missing.yaml: No such file or directory"):
        read([str(tmp_path / "missing.yaml")])


def test_the_namespace_is_filled_in_only_when_the_document_has_none():
    named, bare = parse("metadata: {name: a, namespace: team}\n---\nmetadata: {name: b}\n", source="f")
    assert named.with_namespace("other")["metadata"]["namespace"] == "team"
    assert bare.with_namespace("other")["metadata"] == {"name": "b", "namespace": "other"}
