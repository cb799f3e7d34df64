"""The load and fault scripts' Streamlit client: its reading of ForwardMsgs and the widget states it builds."""

from __future__ import annotations

import sys
from pathlib import Path

from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.Common_pb2 import FileUploaderState, UploadedFileInfo
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.state.common import user_key_from_element_id

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.stclient import Run, element_problem, user_key, widget_state  # noqa: E402


def _element(kind: str, **fields: object) -> ForwardMsg:
    msg = ForwardMsg()
    proto = getattr(msg.delta.new_element, kind)
    for name, value in fields.items():
        if isinstance(value, list):
            getattr(proto, name).extend(value)
        else:
            setattr(proto, name, value)
    return msg


def test_user_keys_are_read_as_streamlit_reads_them() -> None:
    for wid in ["$$ID-0a1b-ms_upload", "$$ID-0a1b-cmp_prices_a100-80gb-sxm-l40s", "$$ID-0a1b-None"]:
        assert user_key(wid) == user_key_from_element_id(wid)
    assert user_key("$$ID-0a1b-ms_upload") == "ms_upload"
    assert user_key("$$ID-0a1b-None") is None
    assert user_key("FormSubmitter:custom_gpu-Add accelerator") is None


def test_exceptions_error_alerts_and_missing_pages_are_problems_and_other_alerts_are_not() -> None:
    assert element_problem(_element("exception", type="KeyError", message="'gpu'")) == "exception KeyError: 'gpu'"
    assert element_problem(_element("alert", body="Not added", format=Alert.ERROR)) == "error alert: Not added"
    assert element_problem(_element("alert", body="above the ceiling", format=Alert.WARNING)) is None
    assert element_problem(_element("markdown", body="text")) is None
    missing = ForwardMsg()
    missing.page_not_found.page_name = "nope"
    assert element_problem(missing) == "page not found: 'nope'"
    compile_error = ForwardMsg()
    compile_error.session_event.script_compilation_exception.type = "SyntaxError"
    assert element_problem(compile_error) is not None


def test_a_run_collects_widgets_by_key_alerts_progress_and_problems() -> None:
    run = Run()
    run.add(_element("number_input", id="$$ID-ab-sc_batch", label="Batch"))
    run.add(_element("button", id="$$ID-cd-ms_import", label="Import", disabled=True))
    run.add(_element("alert", body="Imported 3 measurements (generic-csv) as x.", format=Alert.SUCCESS))
    run.add(_element("alert", body="bad row 2", format=Alert.ERROR))
    run.add(_element("progress", text="writing 3 measurements", value=80))
    assert set(run.widgets) == {"sc_batch", "ms_import"}
    assert run.widgets["ms_import"][0] == "button" and run.widgets["ms_import"][1].disabled
    assert run.ids == {"$$ID-ab-sc_batch", "$$ID-cd-ms_import"}
    assert run.success_texts() == ["Imported 3 measurements (generic-csv) as x."]
    assert run.problems == ["error alert: bad row 2"]
    assert [text for _, text in run.progress] == ["writing 3 measurements"]


def test_widget_states_carry_the_value_type_each_widget_registers() -> None:
    # the value types Streamlit's widgets register (register_widget(value_type=...)) in the installed version
    cases = {
        ("number_input", 32): ("double_value", 32.0),
        ("selectbox", "fp8"): ("string_value", "fp8"),
        ("text_input", "load s1 r1"): ("string_value", "load s1 r1"),
        ("radio", "fp4"): ("string_value", "fp4"),
        ("checkbox", True): ("bool_value", True),
        ("button", True): ("trigger_value", True),
    }
    for (kind, value), (field, expected) in cases.items():
        ws = widget_state("$$ID-x-k", kind, value)
        assert ws.id == "$$ID-x-k"
        assert ws.WhichOneof("value") == field
        assert getattr(ws, field) == expected
    slider = widget_state("$$ID-x-k", "slider", [0.8])
    assert slider.WhichOneof("value") == "double_array_value" and list(slider.double_array_value.data) == [0.8]
    multi = widget_state("$$ID-x-k", "multiselect", ["SXM", "OAM"])
    assert list(multi.string_array_value.data) == ["SXM", "OAM"]
    info = UploadedFileInfo(name="a.csv", size=3, file_id="f1")
    up = widget_state("$$ID-x-k", "file_uploader", FileUploaderState(uploaded_file_info=[info]))
    assert up.WhichOneof("value") == "file_uploader_state_value"
    assert up.file_uploader_state_value.uploaded_file_info[0].file_id == "f1"
