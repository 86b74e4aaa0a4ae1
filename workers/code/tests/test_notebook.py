"""Jupyter notebooks: a notebook's cells are projected as the script they make (notebook.py);
in an archive they are source files whose imports resolve like a module's. Before, an
`.ipynb` was passed over as `not_source`, and a data-science repository lost most of its
code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from code_worker import handle
from code_worker.archive_handler import handle_archive
from code_worker.notebook import notebook_script
from workers_common import InvalidInput, TooLarge
from workers_common.conformance import check_determinism, check_submissions, run_handler

from code_corpus import zip_bytes


def notebook(cells: list[dict[str, Any]], language: str = "python", nbformat: int = 4) -> bytes:
    metadata = {"kernelspec": {"name": language, "language": language, "display_name": language}}
    if nbformat == 3:
        document: dict[str, Any] = {
            "nbformat": 3,
            "metadata": metadata,
            "worksheets": [{"cells": cells}],
        }
    else:
        document = {"nbformat": 4, "nbformat_minor": 5, "metadata": metadata, "cells": cells}
    return json.dumps(document, indent=1).encode()


def code(source: str | list[str], outputs: list[Any] | None = None) -> dict[str, Any]:
    return {"cell_type": "code", "metadata": {}, "outputs": outputs or [], "source": source}


def markdown(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


ANALYSIS = notebook(
    [
        markdown("# Analysis\nLoad the data."),
        code(["%matplotlib inline\n", "import pandas as pd\n", "from mypkg.util import clean\n"]),
        code(
            "def load(path):\n    return clean(pd.read_csv(path))\n\n"
            "class Model:\n    def fit(self):\n        return load('a.csv')\n",
            outputs=[{"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo=" * 5000}}],
        ),
        code(["!pip install pandas\n", "Model().fit()"]),
    ]
)


def _project(tmp_path: Path, data: bytes, **options: Any) -> tuple[list[bytes], dict[str, Any]]:
    path = tmp_path / "analysis.ipynb"
    path.write_bytes(data)
    opts = {"root": "repo", "path": "notebooks/analysis.ipynb", **options}
    subs = run_handler(handle, path, format="code", options=opts)
    check_submissions(subs)
    return subs, json.loads(subs[0])


def test_a_notebook_is_projected_as_its_cells_script(tmp_path: Path) -> None:
    _, sub = _project(tmp_path, ANALYSIS, resolve={"mypkg.util": "mypkg/util.py"})
    text = sub["canonicalText"]
    assert text.startswith("# %% [markdown]\n# # Analysis\n# Load the data.\n\n# %%\n")
    assert "# %matplotlib inline\nimport pandas as pd" in text  # magics commented out
    assert "iVBORw0KGgo" not in text  # outputs are not source
    by_label = {n["labels"][0]: n for n in sub["nodes"]}
    file = by_label["FILE"]["properties"]
    assert file["notebook"] == {"cells": 4, "code_cells": 3}
    assert (file["language"], file["parse_errors"]) == ("python", 0)
    assert file["bytes"] == len(ANALYSIS)  # the notebook's own bytes and hash
    ids = {n["id"] for n in sub["nodes"]}
    symbol = "code:sym:repo/notebooks/analysis.ipynb#"
    assert {symbol + "load", symbol + "Model", symbol + "Model.fit"} <= ids
    for node in sub["nodes"][1:]:  # spans are byte-exact in the script
        span = sub["spans"][node["spanRefs"][0]]
        defined = text.encode()[span["start"] : span["end"]].decode()
        assert defined.startswith(("def ", "class ")), defined
    targets = {(r["type"], r.get("toId")) for r in sub["relationships"]}
    assert ("IMPORTS", "code:file:repo/mypkg/util.py") in targets
    assert ("CALLS", "code:sym:repo/mypkg/util.py#clean") in targets


def test_an_older_notebook_and_another_kernels_notebook(tmp_path: Path) -> None:
    v3 = notebook(
        [{"cell_type": "code", "input": "def f():\n    return 1\n", "outputs": []}], nbformat=3
    )
    _, sub = _project(tmp_path, v3)
    assert "code:sym:repo/notebooks/analysis.ipynb#f" in {n["id"] for n in sub["nodes"]}
    r_notebook = notebook([code("x <- c(1, 2)\nmean(x)\n")], language="R")
    _, sub = _project(tmp_path, r_notebook)
    assert [n["labels"] for n in sub["nodes"]] == [["FILE"]]
    assert sub["nodes"][0]["properties"]["language"] == "r"
    assert "# %%\nx <- c(1, 2)" in sub["canonicalText"]


@pytest.mark.parametrize(
    "data",
    [b"not json at all", b"[1, 2, 3]", b'{"metadata": {}}', b'{"cells": "none"}', b"\xff\xfe{"],
)
def test_what_is_not_a_notebook_is_invalid_input(data: bytes, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="not a Jupyter notebook"):
        _project(tmp_path, data)


def test_the_same_notebook_gives_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "analysis.ipynb"
    path.write_bytes(ANALYSIS)
    check_determinism("code_worker:handle", path, format="code", options={"root": "repo"})
    assert notebook_script(ANALYSIS) == notebook_script(ANALYSIS)


def test_an_archives_notebook_is_a_source_file_whose_imports_resolve(tmp_path: Path) -> None:
    files = {
        "mypkg/__init__.py": b"",
        "mypkg/util.py": b"def clean(frame):\n    return frame\n",
        "notebooks/analysis.ipynb": ANALYSIS,
    }
    path = tmp_path / "repo.zip"
    path.write_bytes(zip_bytes(files))
    subs = [json.loads(s) for s in run_handler(handle_archive, path, format="code-archive")]
    children = {c["options"]["path"]: c for s in subs for c in s.get("childJobs", [])}
    assert sorted(children) == ["mypkg/__init__.py", "mypkg/util.py", "notebooks/analysis.ipynb"]
    table = children["notebooks/analysis.ipynb"]["options"]["resolve"]
    assert table["mypkg.util"] == "mypkg/util.py"
    assert table["#mypkg/util.py"] == "clean"
    assert subs[0]["nodes"][0]["properties"]["languages"] == {"python": 3}


def test_an_archives_r_notebook_counts_as_r(tmp_path: Path) -> None:
    """The REPOSITORY counted every `.ipynb` as Python; the kernel says what it is."""
    files = {
        "analysis.ipynb": ANALYSIS,
        "stats.ipynb": notebook([code("x <- c(1, 2)\nmean(x)\n")], language="R"),
    }
    path = tmp_path / "repo.zip"
    path.write_bytes(zip_bytes(files))
    subs = [json.loads(s) for s in run_handler(handle_archive, path, format="code-archive")]
    assert subs[0]["nodes"][0]["properties"]["languages"] == {"python": 1, "r": 1}


def test_a_notebook_with_large_outputs_is_read_and_its_script_is_capped(tmp_path: Path) -> None:
    """A notebook's plots (base64 outputs) make it megabytes while its code is small: the
    file has its own cap (max_notebook_bytes, 32 MiB), its script the source file's."""
    plot = {"output_type": "display_data", "data": {"image/png": "A" * (5 * 1024 * 1024)}}
    heavy = notebook([code("def f():\n    return 1\n", outputs=[plot])])
    assert len(heavy) > 4 * 1024 * 1024  # over the default max_file_bytes
    _, sub = _project(tmp_path, heavy)
    assert "code:sym:repo/notebooks/analysis.ipynb#f" in {n["id"] for n in sub["nodes"]}
    with pytest.raises(TooLarge, match=r"script of .* over max_file_bytes=20"):
        _project(tmp_path, heavy, max_file_bytes=20)
    with pytest.raises(TooLarge, match="over max_notebook_bytes=1000"):
        _project(tmp_path, heavy, max_notebook_bytes=1000)
    path = tmp_path / "repo.zip"
    path.write_bytes(zip_bytes({"a.ipynb": heavy, "b.ipynb": ANALYSIS}))
    subs = run_handler(
        handle_archive,
        path,
        format="code-archive",
        options={"max_notebook_bytes": len(ANALYSIS) + 1},
    )
    children = {c["options"]["path"]: c for s in subs for c in json.loads(s).get("childJobs", [])}
    assert children["a.ipynb"]["options"]["oversize"] == {
        "bytes": len(heavy),
        "limit": 4 * 1024 * 1024,
        "what": "max_file_bytes",
    }
    assert "oversize" not in children["b.ipynb"]["options"]
    subs = run_handler(handle_archive, path, format="code-archive")
    children = {c["options"]["path"]: c for s in subs for c in json.loads(s).get("childJobs", [])}
    assert "oversize" not in children["a.ipynb"]["options"]
    assert children["a.ipynb"]["options"]["max_notebook_bytes"] == 32 * 1024 * 1024
