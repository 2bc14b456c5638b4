// SPDX-License-Identifier: MIT
// Approvals: an interrupt whose value is a list of LangGraph HumanInterrupt requests (what
// human_in_the_loop_middleware asks before a tool call runs, docs/agents.md) shown as one card
// per request, in the manner of LangChain's agent inbox: the description, the action and its
// arguments (editable as JSON when the request allows an edit) and a button for each answer its
// config allows. When every request has its HumanResponse, they go back as one list, in order.
import { el } from "./dom.js";

// The answers (HumanResponse types), their buttons and the config key that allows each.
const ANSWERS = [
  { type: "accept", label: "Accept", allow: "allow_accept", hint: "Run the call as it is" },
  { type: "edit", label: "Edit", allow: "allow_edit", hint: "Run the call with the arguments edited above" },
  { type: "response", label: "Respond", allow: "allow_respond", hint: "Answer the call with the text above instead of running it" },
  { type: "ignore", label: "Ignore", allow: "allow_ignore", hint: "Skip the call" },
];

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function isRequest(request) {
  return (
    isObject(request) &&
    isObject(request.action_request) &&
    typeof request.action_request.action === "string" &&
    isObject(request.config) &&
    ANSWERS.some((a) => request.config[a.allow] === true)
  );
}

/** Whether an interrupt's `value` is a list of HumanInterrupt requests, each allowing an answer. */
export function isHumanInterrupts(value) {
  return Array.isArray(value) && value.length > 0 && value.every(isRequest);
}

function summary(response) {
  if (response.type === "accept") return "Accepted";
  if (response.type === "ignore") return "Ignored";
  if (response.type === "edit") return `Edited: ${JSON.stringify(response.args.args)}`;
  return `Responded: ${response.args}`;
}

/**
 * Shows `requests` (HumanInterrupt objects) as cards in `container`. `submit(responses)` gets the
 * HumanResponse list once every request has one; `fail(message)` reports an answer that cannot be
 * sent (arguments that are not a JSON object).
 */
export function renderApprovals(container, requests, { submit, fail }) {
  const answers = requests.map(() => null);
  const cards = [];
  let sent = false;

  const answer = (index, response) => {
    if (sent) return;
    answers[index] = response;
    cards[index].show(response);
    if (answers.every(Boolean)) {
      sent = true;
      for (const card of cards) card.lock();
      submit(answers.slice());
    }
  };
  const change = (index) => {
    if (sent) return;
    answers[index] = null;
    cards[index].show(null);
  };

  const heading = el(
    "h3",
    "",
    requests.length === 1 ? "Approval needed" : `Approval needed: ${requests.length} requests, answer each`,
  );
  const list = el("ol", "approval-list");
  requests.forEach((request, index) => {
    const card = approvalCard(request, index, requests.length, {
      answer: (response) => answer(index, response),
      change: () => change(index),
      fail,
    });
    cards.push(card);
    const item = el("li");
    item.append(card.node);
    list.append(item);
  });
  container.replaceChildren(heading, list);
}

function approvalCard(request, index, total, { answer, change, fail }) {
  const { action, args = {} } = request.action_request;
  const config = request.config;
  const id = `approval-${index}`;
  const node = el("article", "approval");
  node.dataset.action = action;
  const title = el("h4", "approval-title");
  title.id = `${id}-title`;
  title.append(
    el("span", "approval-kind", total === 1 ? "Tool call" : `Tool call ${index + 1} of ${total}`),
    " ",
    el("code", "approval-action", action),
  );
  node.setAttribute("aria-labelledby", title.id);
  node.append(title);
  if (request.description) node.append(el("p", "approval-description", String(request.description)));

  // The arguments: a JSON field when they may be edited, else shown as they are.
  const argsText = JSON.stringify(args, null, 2);
  let argsField = null;
  if (config.allow_edit) {
    const label = el("label", "", "Arguments (JSON, editable)");
    argsField = el("textarea", "approval-args");
    argsField.id = `${id}-args`;
    argsField.spellcheck = false;
    argsField.value = argsText;
    argsField.rows = Math.min(Math.max(argsText.split("\n").length, 2), 12);
    label.htmlFor = argsField.id;
    node.append(label, argsField);
  } else {
    const label = el("span", "approval-label", "Arguments");
    label.id = `${id}-args-label`;
    const pre = el("pre", "approval-args", argsText);
    pre.setAttribute("aria-labelledby", label.id);
    node.append(label, pre);
  }

  let responseField = null;
  if (config.allow_respond) {
    const label = el("label", "", "Response (sent instead of running the call)");
    responseField = el("textarea", "approval-response");
    responseField.id = `${id}-response`;
    responseField.rows = 2;
    label.htmlFor = responseField.id;
    node.append(label, responseField);
  }

  const buttons = el("div", "row approval-actions");
  const byType = {};
  for (const kind of ANSWERS.filter((a) => config[a.allow] === true)) {
    const button = el("button", `approval-${kind.type}`, kind.label);
    button.type = "button";
    button.title = kind.hint;
    button.setAttribute("aria-describedby", title.id);
    button.addEventListener("click", () => {
      const response = responseOf(kind.type);
      if (response) answer(response);
    });
    byType[kind.type] = button;
    buttons.append(button);
  }
  node.append(buttons);
  if (responseField && byType.response) {
    const respond = byType.response;
    respond.disabled = true;
    responseField.addEventListener("input", () => (respond.disabled = !responseField.value.trim()));
  }

  // What was answered, with a way back while other requests still wait for theirs.
  const chosen = el("p", "approval-answer");
  chosen.setAttribute("role", "status");
  const chosenText = el("span");
  const undo = el("button", "approval-change", "Change");
  undo.type = "button";
  undo.setAttribute("aria-describedby", title.id);
  undo.addEventListener("click", change);
  chosen.append(chosenText, " ", undo);
  chosen.hidden = true;
  node.append(chosen);

  function responseOf(type) {
    if (type === "accept" || type === "ignore") return { type, args: null };
    if (type === "response") {
      const text = responseField.value.trim();
      return text ? { type, args: text } : null;
    }
    let edited;
    try {
      edited = JSON.parse(argsField.value);
    } catch (error) {
      fail(`The arguments of ${action} are not valid JSON: ${error.message}`);
      return null;
    }
    if (!isObject(edited)) {
      fail(`The arguments of ${action} must be a JSON object`);
      return null;
    }
    return { type: "edit", args: { action, args: edited } };
  }

  const controls = () => [argsField, responseField, ...Object.values(byType)].filter(Boolean);
  return {
    node,
    show(response) {
      node.classList.toggle("answered", Boolean(response));
      buttons.hidden = Boolean(response);
      for (const control of [argsField, responseField]) if (control) control.readOnly = Boolean(response);
      chosen.hidden = !response;
      chosenText.textContent = response ? summary(response) : "";
      if (response) undo.focus();
      else (argsField ?? buttons.querySelector("button"))?.focus();
    },
    lock() {
      for (const control of controls()) control.disabled = true;
      undo.hidden = true;
    },
  };
}
