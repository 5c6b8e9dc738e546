// The console: one page, views chosen by the URL's hash (bookmarkable, back button works).
//
//   #/                          home: my apps, jobs and tokens (users); my domains (admins)
//   #/domains                   the domains I can see (platform admins create and delete them)
//   #/domains/D                 a domain: its settings and users (create, delete; paged)
//   #/domains/D/users/U         a user: apps (start, open, delete; live status), jobs, tokens, access keys
//   #/audit?actor=&action=…     the audit log with filters (paged)
//
// Everything comes from the hub's public API (/api/v1) with the session cookie; nothing here
// decides permissions: the page offers what the role usually may, the API has the last word.

import { api, el, errorBox, fill, me, poll, statusBadge, table, when } from "./common.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const isAdmin = me.platform || me.role === "admin";
let stopPolling = () => {};

const enc = encodeURIComponent;
const userPath = (d, u) => `domains/${enc(d)}/users/${enc(u)}`;

function navigation(current) {
  const links = [["#/", "Home"]];
  if (isAdmin) links.push(["#/domains", "Domains"], ["#/audit", "Audit log"]);
  links.push([`#/domains/${enc(me.domain)}/users/${enc(me.user)}`, "My tokens"]);
  fill(nav, links.map(([href, label]) => el("a", { href, "aria-current": href === current ? "page" : null }, label)));
}

function head(title, lede) {
  return el("div", { class: "page-head" }, el("h1", {}, title), lede ? el("p", { class: "lede" }, lede) : null);
}

/** A form whose submit runs `action(values)`; shows the API's error under it, never reloads. */
function actionForm(fields, label, action, { cls = "toolbar" } = {}) {
  const message = el("div", { role: "status", "aria-live": "polite" });
  const form = el("form", { class: cls }, fields, el("button", { type: "submit", class: "primary" }, label), message);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(form).entries());
    fill(message);
    try {
      await action(values, form);
    } catch (error) {
      fill(message, errorBox(error));
    }
  });
  return form;
}

function confirmButton(label, question, action, cls = "danger") {
  return el("button", {
    type: "button",
    class: cls,
    onclick: async (event) => {
      if (!confirm(question)) return;
      event.target.disabled = true;
      try {
        await action();
      } catch (error) {
        event.target.after(errorBox(error));
        event.target.disabled = false;
      }
    },
  }, label);
}

/** A running job's buttons (docs/jobs.md): capture the next steps with the PyTorch profiler, stop the run. */
function jobActions(d, u, job) {
  if (job.status !== "InProgress" || job.completed_at) return null;
  const path = `${userPath(d, u)}/jobs/${enc(job.job_id)}`;
  const note = el("span", { class: "muted" });
  return el("div", { class: "actions" },
    confirmButton("Capture 5 steps now", `Run the PyTorch profiler on the next 5 steps of ${job.name}?`, async () => {
      const capture = await api(`${path}/captures`, { method: "POST", body: { steps: 5 } });
      fill(note, `capture ${capture.id} asked: the trace arrives with the job's files`);
    }, ""),
    job.stop_request && job.stop_request.by === "user" ? null : confirmButton("Stop", `Stop ${job.name}? Its script gets ph.StopTraining at its next step.`, async () => {
      await api(`${path}/stop`, { method: "POST" });
      fill(note, "stop asked: the run stops at its next step");
    }),
    note);
}

/** A paged list: `load(next_token)` -> Page; `render(items)` -> node; "More" fetches the next page. */
function paged(load, render) {
  const box = el("div", { "aria-busy": "true" }, el("p", { class: "muted" }, "Loading…"));
  const items = [];
  const more = async (token) => {
    try {
      const page = await load(token);
      items.push(...page.items);
      fill(box, render(items), page.next_token
        ? el("nav", { class: "pager" }, el("button", { type: "button", onclick: () => more(page.next_token) }, "More"),
            el("span", {}, `${items.length} shown`))
        : null);
    } catch (error) {
      fill(box, errorBox(error));
    }
  };
  more(null);
  return box;
}

const withToken = (path, token, params = {}) => {
  const query = new URLSearchParams({ limit: "50", ...params });
  if (token) query.set("next_token", token);
  return `${path}?${query}`;
};

// -- views --------------------------------------------------------------------------------------

async function home() {
  navigation("#/");
  const parts = [head(`Hello, ${me.user}`, `Domain ${me.domain} · ${me.platform ? "platform administrator" : me.role}`)];
  if (me.impersonatedBy) {
    parts.push(el("p", { class: "warn-box" }, `This session was started by ${me.impersonatedBy}: it cannot open apps unless the domain allows impersonation.`));
  }
  if (!me.platform) parts.push(await userSections(me.domain, me.user, true));
  if (isAdmin) parts.push(el("h2", { class: "section" }, "Domains"), domainsList());
  fill(main, parts);
}

function domainsList() {
  return paged((t) => api(withToken("domains", t)), (items) =>
    table(["Domain", "Status", "Idle shutdown", "Users manage own apps", "Created"], items.map((d) => [
      el("a", { href: `#/domains/${enc(d.name)}` }, d.name),
      statusBadge(d.status),
      d.settings.idle_minutes ? `${d.settings.idle_minutes} min` : "never",
      d.settings.users_manage_own_apps ? "yes" : "no",
      when(d.created_at),
    ]), "No domains yet."));
}

async function domains() {
  navigation("#/domains");
  const parts = [head("Domains", "Each domain holds users, their apps and their jobs.")];
  if (me.platform) {
    parts.push(actionForm([el("label", {}, "New domain ", el("input", { name: "name", required: true, pattern: "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", placeholder: "team-a" }))],
      "Create domain", async ({ name }) => { await api("domains", { method: "POST", body: { name } }); location.hash = `#/domains/${enc(name)}`; }));
  }
  parts.push(domainsList());
  fill(main, parts);
}

async function domain(name) {
  navigation("#/domains");
  const d = await api(`domains/${enc(name)}`);
  const s = d.settings;
  // Platform admins edit every setting; a domain's own admins the everyday ones (UpdateDomainSettings).
  const own = !me.platform && isAdmin && me.domain === d.name;
  const fields = [
    el("label", {}, "Idle shutdown (min, 0 = never) ", el("input", { name: "idle_minutes", type: "number", min: 0, value: s.idle_minutes })),
    el("label", {}, el("input", { name: "users_manage_own_apps", type: "checkbox", checked: s.users_manage_own_apps }), " users manage their own apps"),
  ];
  if (me.platform) {
    fields.push(
      el("label", {}, el("input", { name: "allow_impersonation", type: "checkbox", checked: s.allow_impersonation }), " allow impersonation (audited)"),
      el("label", {}, el("input", { name: "create_users_on_sign_in", type: "checkbox", checked: s.create_users_on_sign_in }), " OpenID sign-in adds users who have no profile yet"));
  }
  const facts = el("dl", { class: "facts" },
    ...(me.platform || own ? [] : [
      el("dt", {}, "Idle shutdown"), el("dd", {}, s.idle_minutes ? `${s.idle_minutes} min` : "never"),
      el("dt", {}, "Users manage own apps"), el("dd", {}, s.users_manage_own_apps ? "yes" : "no")]),
    ...(me.platform ? [] : [
      el("dt", {}, "Impersonation"), el("dd", {}, s.allow_impersonation ? "allowed (audited)" : "off"),
      el("dt", {}, "OpenID sign-in adds missing users"), el("dd", {}, s.create_users_on_sign_in ? "yes" : "no")]));
  const settings = me.platform || own
    ? el("div", {}, actionForm(fields, "Save settings", async (values, form) => {
        const changes = {
          idle_minutes: Number(values.idle_minutes),
          users_manage_own_apps: form.elements.users_manage_own_apps.checked,
        };
        if (me.platform) {
          changes.allow_impersonation = form.elements.allow_impersonation.checked;
          changes.create_users_on_sign_in = form.elements.create_users_on_sign_in.checked;
        }
        await api(`domains/${enc(name)}`, { method: "PATCH", body: { settings: changes } });
        route();
      }), facts)
    : facts;
  const createUser = actionForm([
    el("label", {}, "New user ", el("input", { name: "name", id: "new-user", required: true, placeholder: "alice" })),
    el("label", {}, "Role ", el("select", { name: "role" }, el("option", {}, "user"), el("option", {}, "admin"))),
  ], "Create user", async ({ name, role }) => {
    await api(`domains/${enc(d.name)}/users`, { method: "POST", body: { name, role } });
    location.hash = `#/domains/${enc(d.name)}/users/${enc(name)}`;
  });
  const users = paged((t) => api(withToken(`domains/${enc(d.name)}/users`, t)), (items) =>
    table(["User", "Role", "Created", ""], items.map((u) => [
      el("a", { href: `#/domains/${enc(d.name)}/users/${enc(u.name)}` }, u.name), u.role, when(u.created_at),
      confirmButton("Delete", `Delete user ${u.name}? Their tokens and sessions end at once.`, async () => {
        await api(userPath(d.name, u.name), { method: "DELETE" });
        route();
      }),
    ]), "No users yet: create the first one above."));
  const parts = [
    head(`Domain ${d.name}`, `${d.status} · created ${new Date(d.created_at).toLocaleString()}`),
    el("section", { class: "card" }, el("h2", {}, "Settings"), settings),
    el("h2", { class: "section" }, "Users"), createUser, users,
  ];
  if (me.platform) {
    parts.push(el("p", { class: "section" }, confirmButton("Delete domain", `Delete domain ${d.name}? It must have no users.`, async () => {
      await api(`domains/${enc(d.name)}`, { method: "DELETE" });
      location.hash = "#/domains";
    })));
  }
  fill(main, parts);
}

async function user(d, u) {
  navigation(d === me.domain && u === me.user ? `#/domains/${enc(me.domain)}/users/${enc(me.user)}` : "#/domains");
  const profile = await api(userPath(d, u));
  const own = d === me.domain && u === me.user;
  fill(main, head(own ? "My apps, jobs and tokens" : `User ${d}/${u}`, `${profile.role} · created ${new Date(profile.created_at).toLocaleString()}`),
    await userSections(d, u, own));
}

async function userSections(d, u, own) {
  const box = el("div", {});
  const apps = el("div", { id: "apps", "aria-busy": "true" });
  const live = el("span", { class: "live", "aria-live": "polite" });
  const start = el("button", { type: "button", class: "primary", id: "start-app", onclick: async () => {
    start.disabled = true;
    try {
      await api(`${userPath(d, u)}/apps`, { method: "POST", body: { app_type: "DetailedProfiler" } });
      refresh();
    } catch (error) {
      start.after(errorBox(error));
    }
    start.disabled = false;
  } }, "Start profiler");
  let active = false;
  const refresh = async () => {
    const page = await api(`${userPath(d, u)}/apps?limit=100`);
    const shown = page.items.filter((a) => a.status !== "Deleted");
    active = shown.some((a) => a.status === "Pending" || a.status === "Deleting");
    start.hidden = shown.some((a) => a.app_type === "DetailedProfiler" && a.app_name === "default");
    live.textContent = active ? "updating…" : "";
    fill(apps, table(["App", "Status", "Last activity", ""], shown.map((a) => [
      `${a.app_type}/${a.app_name}`,
      [statusBadge(a.status), a.failure_reason ? el("div", { class: "reason" }, a.failure_reason) : null],
      when(a.last_activity_at),
      el("div", { class: "actions" },
        own && a.status === "InService" ? el("button", { type: "button", class: "primary", dataset: { open: a.app_id }, onclick: () => openApp(d, u, a) }, "Open profiler") : null,
        a.status === "InService" || a.status === "Failed" ? confirmButton("Delete", `Delete the app ${a.app_name}? Its traces stay.`, async () => {
          await api(`${userPath(d, u)}/apps/${a.app_type}/${enc(a.app_name)}`, { method: "DELETE" });
          refresh();
        }) : null),
    ]), own ? "You have no profiler running. Start one: it takes a few seconds." : "No apps. Start this user's profiler."));
  };
  // Every 2 s while the page shows (slower in a background tab): a Pending app turns InService,
  // and one the culler or another admin deleted disappears, without a reload.
  stopPolling = poll(refresh, 2000);
  box.append(el("h2", { class: "section" }, "Apps ", live), el("div", { class: "toolbar" }, start), apps);
  box.append(el("h2", { class: "section" }, "Jobs"), paged((t) => api(withToken(`${userPath(d, u)}/jobs`, t)), (items) =>
    table(["Job", "Status", "Started", "Completed", ""], items.map((j) => [
      j.name, [statusBadge(j.status), j.failure_reason ? el("div", { class: "reason" }, j.failure_reason) : null,
        j.stop_request && j.stop_request.by === "user" ? el("div", { class: "reason" }, `Stop asked by ${j.stop_request.actor}`) : null],
      when(j.created_at), when(j.completed_at), jobActions(d, u, j),
    ]), "No jobs yet. Run a training script with the SDK and PROFILERHUB_TOKEN set (see Tokens).")));
  box.append(tokensSection(d, u, own));
  box.append(accessKeysSection(d, u, own));
  if (me.localAccounts === "true" && own && !me.impersonatedBy) box.append(passwordSection(d, u), twoFactorSection(d, u));
  if (me.localAccounts === "true" && !own && isAdmin) box.append(invitationSection(d, u));
  if (!own && isAdmin) box.append(signInLinkSection(d, u));
  return box;
}

async function openApp(d, u, app) {
  try {
    const link = await api(`${userPath(d, u)}/apps/${app.app_type}/${enc(app.app_name)}/presigned-url`, { method: "POST", body: { expires_in_seconds: 30 } });
    location.assign(link.url);
  } catch (error) {
    main.prepend(errorBox(error));
  }
}

// A secret just created: the only time it is shown, with a copy button.
function shownOnce(words, id, snippet) {
  return el("div", { class: "notice" },
    el("p", {}, el("b", {}, "Copy it now: "), words),
    el("pre", { class: "snippet", id }, snippet),
    el("button", { type: "button", onclick: () => navigator.clipboard?.writeText(snippet) }, "Copy"));
}

function tokensSection(d, u, own) {
  const created = el("div", { id: "token-created", "aria-live": "polite" });
  const list = el("div", {});
  const load = () => fill(list, paged((t) => api(withToken(`${userPath(d, u)}/tokens`, t)), (items) =>
    table(["Token", "Note", "Status", "Created", "Last used", ""], items.map((t) => [
      el("code", {}, `${t.prefix}…`), [t.note, t.created_by ? el("div", { class: "muted" }, `made by ${t.created_by}`) : null],
      statusBadge(t.status), when(t.created_at), when(t.last_used_at),
      t.status === "active" ? confirmButton("Revoke", "Revoke this token? Scripts using it stop at once.", async () => {
        await api(`${userPath(d, u)}/tokens/${enc(t.token_id)}`, { method: "DELETE" });
        load();
      }) : "",
    ]), "No tokens yet.")));
  const form = actionForm([
    el("label", {}, "Note ", el("input", { name: "note", maxlength: 200, placeholder: "training on node 3" })),
    el("label", {}, "Expires in ", el("select", { name: "expires" },
      el("option", { value: "" }, "never"), el("option", { value: "86400" }, "1 day"),
      el("option", { value: "2592000", selected: true }, "30 days"), el("option", { value: "31536000" }, "1 year"))),
  ], "Create token", async ({ note, expires }) => {
    const body = { note };
    if (expires) body.expires_in_seconds = Number(expires);
    const t = await api(`${userPath(d, u)}/tokens`, { method: "POST", body });
    const snippet = `export PROFILERHUB_URL=${me.publicUrl}\nexport PROFILERHUB_TOKEN=${t.token}`;
    fill(created, shownOnce("the token is shown once. Put these in the training job's environment:", "token-snippet", snippet));
    load();
  });
  load();
  return el("section", {}, el("h2", { class: "section" }, own ? "My tokens" : "Tokens"),
    el("p", { class: "muted" }, own ? "Tokens let your training scripts upload profiles as you." : "A token you make for this user is marked as made by you: it cannot open their apps unless the domain allows impersonation."),
    form, created, list,
    el("p", { class: "section" }, confirmButton("Revoke all tokens and sign out everywhere", "Revoke every token and end every browser session of this user?", async () => {
      await api(`${userPath(d, u)}/tokens`, { method: "DELETE" });
      load();
    })));
}

// Access keys for boto3 and the AWS CLI (docs/sagemaker-api.md): the same API as any script.
function accessKeysSection(d, u, own) {
  const path = `${userPath(d, u)}/access-keys`;
  const created = el("div", { id: "access-key-created", "aria-live": "polite" });
  const list = el("div", { id: "access-keys" });
  const load = () => fill(list, paged((t) => api(withToken(path, t)), (items) =>
    table(["Access key", "Note", "Status", "Created", "Last used", ""], items.map((k) => [
      el("code", {}, k.access_key_id), k.note, statusBadge(k.status), when(k.created_at), when(k.last_used_at),
      k.status === "active" ? confirmButton("Revoke", `Revoke access key ${k.access_key_id}? Requests signed with it are refused at once.`, async () => {
        await api(`${path}/${enc(k.access_key_id)}`, { method: "DELETE" });
        load();
      }) : "",
    ]), "No access keys yet.")));
  const form = actionForm([
    el("label", {}, "Note ", el("input", { name: "note", id: "access-key-note", maxlength: 180, placeholder: "laptop" })),
  ], "Create access key", async ({ note }) => {
    const k = await api(path, { method: "POST", body: { note } });
    const snippet = `export AWS_ACCESS_KEY_ID=${k.access_key_id}\nexport AWS_SECRET_ACCESS_KEY=${k.secret_access_key}\n` +
      `aws sagemaker list-domains --endpoint-url ${me.publicUrl}/sagemaker --region us-east-1`;
    fill(created, shownOnce("the secret access key is shown once.", "access-key-snippet", snippet));
    load();
  });
  load();
  return el("section", { id: "access-keys-section" }, el("h2", { class: "section" }, own ? "My access keys" : "Access keys"),
    el("p", { class: "muted" }, "Access keys sign boto3 and AWS CLI requests to this hub's SageMaker API as ", own ? "you." : "this user."),
    form, created, list);
}

// Local accounts (docs/console.md#local-accounts): an administrator's invitation (also a reset)...
function invitationSection(d, u) {
  const path = `${userPath(d, u)}/invitations`;
  const out = el("div", { id: "invitation-made", "aria-live": "polite" });
  const list = el("div", { id: "invitations" });
  const load = () => fill(list, paged((t) => api(withToken(path, t)), (items) =>
    table(["Invitation", "Status", "Made by", "Expires", ""], items.map((i) => [
      el("code", {}, i.invitation_id.slice(0, 8)), statusBadge(i.status), i.created_by, when(i.expires_at),
      i.status === "open" ? confirmButton("Revoke", "Revoke this invitation? Its link stops working.", async () => {
        await api(`${path}/${enc(i.invitation_id)}`, { method: "DELETE" });
        load();
      }) : "",
    ]), "No invitations yet.")));
  load();
  return el("section", { id: "invitations-section" }, el("h2", { class: "section" }, "Password"),
    el("p", { class: "muted" }, "Invite this user to choose a password: a one-time link for you to send them. ",
      "Inviting a user who has a password resets it: it stops working, the tokens and access keys made from it are revoked, and their sessions end. You never see their password."),
    actionForm([], "Invite", async () => {
      const made = await api(path, { method: "POST", body: {} });
      fill(out, shownOnce(`send this link to ${u}; it works once, until ${new Date(made.expires_at).toLocaleString()}.`, "invitation-url", made.url));
      load();
    }), out, list);
}

// ... and the user's own password change.
function passwordSection(d, u) {
  const done = el("div", { "aria-live": "polite" });
  const field = (name, label, autocomplete) => el("label", {}, label, " ",
    el("input", { type: "password", name, id: name.replaceAll("_", "-"), autocomplete, required: true }));
  return el("section", { id: "password-section" }, el("h2", { class: "section" }, "My password"),
    actionForm([field("current_password", "Current", "current-password"), field("new_password", "New", "new-password")],
      "Change password", async (body, form) => {
        await api(`${userPath(d, u)}/password`, { method: "PUT", body });
        form.reset();
        fill(done, el("p", { class: "notice" }, "Password changed. Your other browsers signed in with it are signed out."));
      }), done);
}

// ... and their second factor: a TOTP secret for an authenticator app, on once a code of it is given.
function twoFactorSection(d, u) {
  const path = `${userPath(d, u)}/two-factor`;
  const box = el("div", { id: "two-factor", "aria-live": "polite" });
  const code = () => el("label", {}, "Code ", el("input", { name: "code", id: "two-factor-code", inputmode: "numeric",
    autocomplete: "one-time-code", maxlength: "12", required: true }));
  const show = (state) => {
    if (state.status === "on") {
      fill(box, el("p", {}, statusBadge("on"), " Password sign-ins ask for a code of your authenticator app."),
        actionForm([code()], "Turn off", async (body) => show(await api(path, { method: "PUT", body: { ...body, enabled: false } }))));
    } else if (state.status === "pending") {
      fill(box, el("p", {}, "Add this secret to your authenticator app (or open the otpauth link on your phone), then enter the code it shows:"),
        el("pre", { class: "snippet", id: "two-factor-secret" }, state.secret),
        el("p", {}, el("a", { href: state.otpauth_url, id: "two-factor-url" }, "otpauth link")),
        actionForm([code()], "Turn on", async (body) => show(await api(path, { method: "PUT", body: { ...body, enabled: true } }))));
    } else {
      fill(box, el("p", { class: "muted" }, "Off: your password alone signs you in."),
        actionForm([], "Set up two-factor sign-in", async () => show(await api(path, { method: "POST", body: {} }))));
    }
  };
  api(path).then(show, (error) => fill(box, errorBox(error)));
  return el("section", { id: "two-factor-section" }, el("h2", { class: "section" }, "Two-factor sign-in"), box);
}

function signInLinkSection(d, u) {
  const out = el("div", { "aria-live": "polite" });
  return el("section", {}, el("h2", { class: "section" }, "Sign-in link"),
    el("p", { class: "muted" }, "A one-time link (valid 5 minutes) that signs a browser in as this user. Links you make are marked as impersonation."),
    actionForm([el("label", {}, "Lands on ", el("select", { name: "landing" }, el("option", {}, "console"), el("option", {}, "app")))],
      "Make link", async ({ landing }) => {
        const link = await api(`${userPath(d, u)}/presigned-url`, { method: "POST", body: { landing } });
        fill(out, el("pre", { class: "snippet" }, link.url));
      }), out);
}

async function audit() {
  navigation("#/audit");
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const filters = ["actor", "action", "target", "outcome", "domain"];
  const form = el("form", { class: "toolbar", role: "search" },
    filters.map((f) => el("label", {}, `${f} `, el("input", { name: f, value: params.get(f) || "", size: 14 }))),
    el("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = new URLSearchParams([...new FormData(form).entries()].filter(([, v]) => v));
    location.hash = `#/audit?${q}`;
  });
  const given = Object.fromEntries([...params.entries()].filter(([k, v]) => filters.includes(k) && v));
  fill(main, head("Audit log", "Who did what, newest first. Sign-ins, refusals and impersonation are here too."), form,
    paged((t) => api(withToken("audit", t, given)), (items) =>
      table(["When", "Actor", "Action", "Target", "Domain", "Outcome", "Detail"], items.map((e) => [
        when(e.at), e.actor, e.action, `${e.target_type} ${e.target}`, e.domain || "–", e.outcome,
        el("code", {}, Object.keys(e.detail).length ? JSON.stringify(e.detail) : ""),
      ]), "No events match these filters.")));
}

// -- routing ------------------------------------------------------------------------------------

async function route() {
  stopPolling();
  stopPolling = () => {};
  const [path] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  try {
    if (parts.length === 0) await home();
    else if (parts[0] === "domains" && parts.length === 1) await domains();
    else if (parts[0] === "domains" && parts.length === 2) await domain(parts[1]);
    else if (parts[0] === "domains" && parts[2] === "users" && parts.length === 4) await user(parts[1], parts[3]);
    else if (parts[0] === "audit") await audit();
    else fill(main, head("Not found", "No such console page."), el("a", { href: "#/" }, "Home"));
  } catch (error) {
    fill(main, errorBox(error), el("p", {}, el("a", { href: "#/" }, "Back to the console's home")));
  }
  main.focus({ preventScroll: true });
}

window.addEventListener("hashchange", route);
route();
