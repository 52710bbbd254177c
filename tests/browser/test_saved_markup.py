"""Issue 33.1-3 in a real JupyterLab: a saved view's `text/markdown` and an
exported notebook's markdown cells, rendered by JupyterLab's own markdown
renderer (marked, then its sanitizer), hold no element, handler or link that
model text planted. The sanitizer removes `<script>` on its own, so the check is
on what a payload could still make live: images, iframes, forms, handlers,
`javascript:` links, and on raw elements at all (a control shows it sees them)."""

from __future__ import annotations

import json

import nbformat
from playwright.sync_api import expect

from mentra_nb import ContentBlock, Message
from mentra_nb.notebook._rendering import transcript_markdown
from mentra_nb.runtime._export import ExportHeader, export_transcript
from tests.browser.notebook_page import NotebookPage
from tests.notebook.test_saved_outputs import HOSTILE_MESSAGES, PAYLOAD

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
# Every element and attribute under the notebook's rendered markdown that only
# raw HTML makes (our markdown makes p, em, strong, code, pre, lists, tables, headings).
PLANTED = """() => {
  const found = [];
  for (const root of document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedMarkdown')) {
    for (const node of root.querySelectorAll('*')) {
      const tag = node.tagName.toLowerCase();
      if (['script', 'img', 'iframe', 'form', 'input', 'svg', 'object', 'embed', 'x-evil', 'div', 'details',
           'style', 'video', 'audio'].includes(tag)) found.push('<' + tag + '>');
      for (const attr of node.attributes) {
        if (attr.name.startsWith('on') || attr.name === 'srcdoc'
            || (['href', 'src'].includes(attr.name) && !/^(https?:|#|$)/i.test(attr.value.trim()))) {
          found.push('<' + tag + ' ' + attr.name + '=' + attr.value + '>');
        }
      }
    }
  }
  return found;
}"""
RENDERED = "() => document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedMarkdown').length"


def open_saved(page, lab_server, request, nb: nbformat.NotebookNode, name: str) -> NotebookPage:
    nb.metadata["kernelspec"] = KERNELSPEC
    nbformat.write(nb, lab_server.root / name)
    opened = NotebookPage(page, lab_server, name)
    request.addfinalizer(opened.close)
    return opened.open_existing()


def view_output(markdown: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("writer")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": markdown,
                                                                  "text/plain": "AgentView"})]
    return cell


def test_saved_views_and_exports_show_model_text_as_text_in_jupyterlab(page, lab_server, request):
    messages = [*HOSTILE_MESSAGES, Message.assistant(ContentBlock.text(PAYLOAD))]
    nb = nbformat.v4.new_notebook()
    # A control: the same text pasted raw does plant elements here, so the probe sees them.
    nb.cells = [view_output(PAYLOAD + "\n\n```\n" + PAYLOAD), view_output(transcript_markdown(messages))]
    saved = open_saved(page, lab_server, request, nb, "saved_markup_views.ipynb")
    page.wait_for_function(f"() => ({RENDERED})() >= 2")
    control = saved.output(0)
    expect(control).to_contain_text("Hi")
    assert page.evaluate(PLANTED), "the probe sees nothing even in raw markdown"
    # Only the escaped view's output from here on: drop the control.
    page.evaluate("() => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[0].remove()")
    expect(saved.output(0)).to_contain_text("<script>alert(1)</script>")
    assert page.evaluate(PLANTED) == []

    header = ExportHeader(name="writer", agent_id="a1", model="anthropic:m")
    exported = nbformat.reads(export_transcript(header, messages, "ipynb"), as_version=4)
    export = open_saved(page, lab_server, request, exported, "saved_markup_export.ipynb")
    page.wait_for_function(f"() => ({RENDERED})() >= {len(exported.cells)}")
    expect(export.cell(len(exported.cells) - 1)).to_contain_text("javascript:alert(1)")
    assert page.evaluate(PLANTED) == [], json.dumps(page.evaluate(PLANTED))
