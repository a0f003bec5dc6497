"""Type stubs of the mcppol package (the native module re-exported)."""

import os
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Union

__version__: str
MAX_ARGUMENT_DEPTH: int
MAX_ARGUMENT_BYTES: int
MAX_TAINT: int

JSON = Any
Verdict = Literal["allow", "ask", "deny"]
Approval = Literal["approved", "new", "changed"]
StrPath = Union[str, "os.PathLike[str]"]

class PolicyError(Exception):
    """A policy that does not load: str(e) is the rendered diagnostic."""

    diagnostics: List["Diagnostic"]

class RequestError(ValueError):
    """A request that cannot be decided as given; the message says how to fix it."""

class Diagnostic:
    """One diagnostic of a policy that did not load."""

    @property
    def code(self) -> str: ...
    @property
    def severity(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def end_column(self) -> int: ...
    @property
    def message(self) -> str: ...
    @property
    def help(self) -> Optional[str]: ...

class Decision:
    """The engine's decision on one request."""

    @property
    def decision(self) -> Verdict: ...
    @property
    def source(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def rule_id(self) -> Optional[str]: ...
    @property
    def policy(self) -> Optional[str]: ...
    @property
    def line(self) -> Optional[int]: ...
    @property
    def allowed(self) -> bool: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def refusal_text(self, reason: Optional[str] = None) -> str: ...

class Policy:
    """One loaded policy."""

    @staticmethod
    def from_file(path: StrPath, name: Optional[str] = None) -> "Policy": ...
    @staticmethod
    def from_str(text: str, name: Optional[str] = None, origin: str = "<string>") -> "Policy": ...
    @property
    def name(self) -> str: ...
    def decide(
        self,
        tool: Optional[str] = None,
        *,
        resource: Optional[str] = None,
        prompt: Optional[str] = None,
        args: Optional[Mapping[str, JSON]] = None,
        annotations: Optional[Mapping[str, JSON]] = None,
        tool_def: Optional[Mapping[str, JSON]] = None,
        lock: Union[Mapping[str, JSON], str, None] = None,
        approval: Optional[Approval] = None,
        taint: Optional[Iterable[str]] = None,
        taint_unknown: bool = False,
        principal: Optional[str] = None,
        assigns: Optional[Mapping[str, JSON]] = None,
        approver: bool = True,
        trust_server: bool = False,
        cwd: Optional[str] = None,
        local_tool: bool = False,
    ) -> Decision: ...
    def explain(
        self,
        tool: Optional[str] = None,
        *,
        format: Literal["text", "json"] = "text",
        resource: Optional[str] = None,
        prompt: Optional[str] = None,
        args: Optional[Mapping[str, JSON]] = None,
        annotations: Optional[Mapping[str, JSON]] = None,
        tool_def: Optional[Mapping[str, JSON]] = None,
        lock: Union[Mapping[str, JSON], str, None] = None,
        approval: Optional[Approval] = None,
        taint: Optional[Iterable[str]] = None,
        taint_unknown: bool = False,
        principal: Optional[str] = None,
        assigns: Optional[Mapping[str, JSON]] = None,
        approver: bool = True,
        trust_server: bool = False,
        cwd: Optional[str] = None,
        local_tool: bool = False,
    ) -> str: ...
    def is_visible(self, server: str, tool: str) -> bool: ...

class Store:
    """Named policies from files and folders, reloaded when they change."""

    def __init__(
        self, paths: Union[StrPath, Sequence[StrPath]], watch: bool = True, poll: bool = False
    ) -> None: ...
    def decide(
        self,
        name: str,
        tool: Optional[str] = None,
        *,
        resource: Optional[str] = None,
        prompt: Optional[str] = None,
        args: Optional[Mapping[str, JSON]] = None,
        annotations: Optional[Mapping[str, JSON]] = None,
        tool_def: Optional[Mapping[str, JSON]] = None,
        lock: Union[Mapping[str, JSON], str, None] = None,
        approval: Optional[Approval] = None,
        taint: Optional[Iterable[str]] = None,
        taint_unknown: bool = False,
        principal: Optional[str] = None,
        assigns: Optional[Mapping[str, JSON]] = None,
        approver: bool = True,
        trust_server: bool = False,
        cwd: Optional[str] = None,
        local_tool: bool = False,
    ) -> Decision: ...
    def names(self) -> List[str]: ...
    @property
    def generation(self) -> int: ...
    def update(self, name_or_file: str, text: str) -> int: ...
    def reload(self) -> Dict[str, int]: ...
    def status(self) -> Dict[str, Any]: ...
    def unwatch(self) -> None: ...

def fingerprint(tool_def: Mapping[str, JSON]) -> str: ...
