// The battle page: one websocket, two panes, four vote buttons. Everything the server sends
// before the vote is keyed by side ("a"/"b"); names arrive only in the "revealed" frame.
(function () {
  "use strict";
  var root = document.getElementById("arena");
  if (!root) return;

  var panes = { a: document.getElementById("pane-a"), b: document.getElementById("pane-b") };
  var reveals = { a: document.getElementById("reveal-a"), b: document.getElementById("reveal-b") };
  var headings = { a: document.getElementById("heading-a"), b: document.getElementById("heading-b") };
  var notice = document.getElementById("notice");
  var integrity = document.getElementById("integrity");
  var form = document.getElementById("prompt-form");
  var box = document.getElementById("prompt");
  var counter = document.getElementById("counter");
  var sendBtn = document.getElementById("send");
  var voteButtons = Array.prototype.slice.call(document.querySelectorAll("#votes button"));
  var maxChars = parseInt(root.dataset.maxChars, 10);

  var state = "idle"; // idle | generating | ready | voted | void
  var battleId = null;
  var drawnPrompt = null; // {id, text} of the curated prompt drawn, while the box still holds it
  var turns = []; // [{a: text, b: text, el: {a: node, b: node}}]
  var ws = null;
  var retry = 0;
  var pendingText = null; // what was sent, until the server accepts it
  var pendingVote = null; // the choice sent, until the reveal comes: sent again after a drop
  var dropped = false; // the socket closed with a battle on: resume it when it opens again
  var resuming = false; // a resume was sent and not yet answered
  var lastSent = null; // the last action sent, sent again while the server is briefly unavailable
  var unavailableTries = 0;
  var refused = false; // the server turned this socket away for good (too many open): no retry
  var offer = document.getElementById("offer");
  var stopBtn = document.getElementById("stop");
  var randomBtn = document.getElementById("random-prompt");
  // The rater may not battle yet (an unconfirmed email): the page says why once, and nothing
  // that would only be refused is offered.
  var blocked = root.dataset.blocked === "true";
  var noticeCause = ""; // what the notice is about: "prompt" ones go once the box is edited
  // Images for the first message: uploaded as they are picked, pasted or dropped (the server
  // keeps a clean copy under its hash), then sent by hash with the start.
  var attachList = document.getElementById("attachments");
  var shownImages = document.getElementById("shown-images");
  var attachLabel = document.getElementById("attach");
  var imageInput = document.getElementById("image-input");
  var maxImageBytes = parseInt(root.dataset.imageMaxBytes, 10);
  var maxImages = parseInt(root.dataset.imageMaxCount, 10);
  var attached = []; // [{sha256, url, li}], in the order picked; sha256 null while uploading
  var pendingImages = null; // what a start sent, until the server accepts it

  function setState(next) {
    state = next;
    root.dataset.state = next;
    var canVote = next === "ready";
    voteButtons.forEach(function (b) { b.disabled = !canVote; });
    sendBtn.textContent = next === "ready" ? "Send follow-up" : "Send";
    box.disabled = next === "generating" || blocked;
    randomBtn.disabled = blocked;
    stopBtn.hidden = next !== "generating";
    stopBtn.disabled = !battleId;
    attachLabel.hidden = !mayAttach();
    // A void battle has no vote to speak of: its "will not count" notice would contradict.
    if (next === "void" || next === "idle") integrity.hidden = true;
    updateCounter();
  }

  function showNotice(text, kind, cause) {
    noticeCause = text ? cause || "" : "";
    notice.textContent = text;
    notice.className = "notice " + (kind || "info");
    notice.hidden = !text;
  }

  // Images ------------------------------------------------------------------------------

  function mayAttach() {
    return !blocked && (state === "idle" || state === "voted" || state === "void");
  }

  function megabytes(n) { return (n / 1000000).toFixed(1) + " MB"; }

  function imageItem(url, alt) {
    var li = document.createElement("li");
    var img = document.createElement("img");
    img.alt = alt;
    if (url) img.src = url;
    li.appendChild(img);
    return li;
  }

  function renderAttached() {
    attachList.hidden = attached.length === 0;
    attached.forEach(function (item, i) {
      item.li.querySelector("img").alt = "Image " + (i + 1) + " of " + attached.length +
        (item.sha256 ? "" : " (uploading)");
    });
    updateCounter();
  }

  function unattach(item) {
    attached = attached.filter(function (x) { return x !== item; });
    if (item.li.parentNode) item.li.parentNode.removeChild(item.li);
    renderAttached();
  }

  function upload(file) {
    var item = { sha256: null, url: null, li: imageItem(null, "") };
    item.li.className = "uploading";
    var remove = document.createElement("button");
    remove.type = "button";
    remove.className = "remove";
    remove.textContent = "×";
    remove.setAttribute("aria-label", "Remove this image");
    remove.addEventListener("click", function () { unattach(item); });
    item.li.appendChild(remove);
    attached.push(item);
    attachList.appendChild(item.li);
    renderAttached();
    var token = form.querySelector("[name=csrfmiddlewaretoken]");
    // The file itself is the body: the server has no form to parse.
    fetch(root.dataset.imageUrl, {
      method: "POST", body: file, credentials: "same-origin",
      headers: { "X-CSRFToken": token ? token.value : "", "Content-Type": file.type },
    })
      .then(function (r) {
        return r.text().then(function (text) {
          var answer = null;
          try { answer = JSON.parse(text); } catch (e) { answer = { message: text }; }
          return { ok: r.ok, body: answer };
        });
      })
      .then(function (res) {
        if (attached.indexOf(item) < 0) return; // removed while it uploaded
        if (!res.ok) {
          unattach(item);
          showNotice((file.name ? file.name + ": " : "") +
            (res.body.message || "That image could not be attached."), "error", "prompt");
          return;
        }
        item.sha256 = res.body.sha256;
        item.url = res.body.url;
        item.li.querySelector("img").src = res.body.url;
        item.li.className = "";
        renderAttached();
      })
      .catch(function () {
        unattach(item);
        showNotice("The image could not be uploaded. Please try again.", "error", "prompt");
      });
  }

  function attachFiles(files) {
    var images = Array.prototype.filter.call(files || [], function (f) {
      return /^image\//.test(f.type);
    });
    if (!images.length) return false;
    if (!mayAttach()) {
      showNotice("Images go with a battle's first message: start a new battle to attach one.",
        "error", "prompt");
      return true;
    }
    images.forEach(function (file) {
      // The limits are refused where they are met, never cut to fit; the server checks again.
      if (attached.length >= maxImages) {
        showNotice("At most " + maxImages + " images may be attached to a prompt.", "error", "prompt");
      } else if (file.size > maxImageBytes) {
        showNotice((file.name || "That image") + " is " + megabytes(file.size) +
          "; an image may be at most " + megabytes(maxImageBytes) + ".", "error", "prompt");
      } else {
        upload(file);
      }
    });
    return true;
  }

  function showImages(urls) {
    // The same images above both panes: what both models were sent.
    shownImages.textContent = "";
    (urls || []).forEach(function (url, i) {
      shownImages.appendChild(imageItem(url, "Image " + (i + 1) + " sent to both models"));
    });
    shownImages.hidden = !(urls && urls.length);
  }

  function clearPanes() {
    showImages([]);
    queued = {};
    turns = [];
    integrity.hidden = true;
    integrity.textContent = "";
    ["a", "b"].forEach(function (s) {
      panes[s].textContent = "";
      reveals[s].hidden = true;
      reveals[s].textContent = "";
      headings[s].textContent = "Model " + s.toUpperCase();
      headings[s].classList.remove("named");
    });
  }

  function addTurn(userText) {
    var turn = { a: "", b: "", el: {} };
    ["a", "b"].forEach(function (s) {
      var wrap = document.createElement("div");
      wrap.className = "turn";
      var user = document.createElement("div");
      user.className = "user-msg";
      user.textContent = userText;
      var bot = document.createElement("div");
      bot.className = "bot-msg md";
      bot.dataset.pending = "true";
      wrap.appendChild(user);
      wrap.appendChild(bot);
      panes[s].appendChild(wrap);
      turn.el[s] = bot;
    });
    turns.push(turn);
  }

  // Deltas arrive many times a second; each pane is rendered at most once a frame, and at once
  // whenever a turn ends (flushRenders), so what is read is always the whole text.
  var queued = {};
  function scheduleRender(turn, side) {
    if (queued[side]) { queued[side].turn = turn; return; }
    queued[side] = { turn: turn };
    requestAnimationFrame(function () {
      var job = queued[side];
      delete queued[side];
      if (job) renderSide(job.turn, side);
    });
  }

  function flushRenders() {
    ["a", "b"].forEach(function (s) {
      var job = queued[s];
      delete queued[s];
      if (job) renderSide(job.turn, s);
    });
  }

  function renderSide(turn, side) {
    // A pane follows new text while the rater is at its foot; one scrolled up to read stays
    // where it is until they scroll back down. Read before the text grows, so a scroll made
    // just now is never undone.
    var pane = panes[side];
    var atFoot = pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 24;
    var el = turn.el[side];
    el.innerHTML = window.ArenaMarkdown.render(turn[side]);
    el.dataset.pending = "false";
    if (atFoot) pane.scrollTop = pane.scrollHeight;
  }

  function send(payload) {
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      showNotice("Not connected to the server yet. Please try again in a moment.", "error");
      return false;
    }
    ws.send(JSON.stringify(payload));
    lastSent = payload;
    return true;
  }

  function retryUnavailable() {
    // The database or Redis was briefly out of reach: the same action again, less and less
    // often; every action is safe to repeat (a repeated vote is answered with the reveal).
    if (lastSent === null || unavailableTries >= 6) return false;
    var payload = lastSent;
    unavailableTries += 1;
    showNotice("The arena is briefly unavailable. Trying again…", "info");
    setTimeout(function () { send(payload); }, 500 * Math.pow(2, unavailableTries - 1));
    return true;
  }

  function rebuildTurns(msg) {
    // A page that has lost its panes (reloaded, reopened): the earlier turns as they were
    // shown, then the last one, which the server shows again from its start.
    clearPanes();
    (msg.earlier || []).forEach(function (past) {
      addTurn(past.text);
      var turn = turns[turns.length - 1];
      ["a", "b"].forEach(function (s) { turn[s] = past[s] || ""; renderSide(turn, s); });
    });
    addTurn(msg.text || "");
  }

  function onFrame(msg) {
    var turn = turns[turns.length - 1];
    if (msg.type !== "error") unavailableTries = 0;
    if (msg.type !== "delta") flushRenders();
    switch (msg.type) {
      case "battle":
        pendingText = null;
        resuming = false;
        battleId = msg.battle;
        root.dataset.battle = battleId;
        stopBtn.disabled = false;
        if (msg.resumed && !turns.length) {
          rebuildTurns(msg);
          showImages(msg.images);
          turn = turns[turns.length - 1];
        }
        pendingImages = null;
        if (msg.resumed && turn) {
          // The server shows the last turn again from its start: the panes start over with it.
          turn.a = "";
          turn.b = "";
          ["a", "b"].forEach(function (s) { renderSide(turn, s); turn.el[s].dataset.pending = "true"; });
          setState("generating");
          showNotice("", "");
        }
        break;
      case "turn":
        pendingText = null;
        break;
      case "delta":
        if (!turn) return;
        ["a", "b"].forEach(function (s) {
          if (msg[s]) {
            turn[s] += msg[s];
            scheduleRender(turn, s);
          }
        });
        break;
      case "turn_complete":
        setState("ready");
        showNotice("Both answers are complete. Vote, or send a follow-up to both models.", "info");
        break;
      case "notice":
        // This battle's vote will not count (identity question or leak): say so before the vote.
        integrity.textContent = msg.message;
        integrity.dataset.code = msg.code;
        integrity.hidden = false;
        break;
      case "void":
        setState("void");
        showNotice(msg.message, "error");
        break;
      case "stopped":
        setState("void");
        showNotice("Stopped. Both answers were cancelled and this battle will not count. " +
          "Start a new battle whenever you like.", "info");
        break;
      case "revealed":
        pendingVote = null;
        setState("voted");
        ["a", "b"].forEach(function (s) {
          var who = msg[s];
          reveals[s].textContent = who.name + (who.organisation ? " · " + who.organisation : "");
          reveals[s].classList.toggle("chosen", msg.choice === s);
          reveals[s].hidden = false;
          headings[s].textContent = who.name;
          headings[s].classList.add("named");
        });
        showNotice("Thanks, your vote is recorded. Start a new battle whenever you like.", "success");
        break;
      case "error":
        if (msg.code === "unavailable" && retryUnavailable()) break;
        if (msg.code === "too_many_sockets") refused = true;
        showNotice(msg.message, "error");
        if (msg.code === "battle_void") setState("void");
        if (state === "generating") stopBtn.disabled = !battleId; // a refused Stop may be sent again
        if (resuming) {
          // The battle cannot be shown again (over, or gone): say why, and let a new one start.
          resuming = false;
          if (state === "generating") setState("void");
        }
        if (pendingVote !== null) {
          pendingVote = null;
          setState(state); // the vote was refused: the buttons are live again if it may be
        }
        if (state === "generating" && pendingText !== null) {
          // The start or follow-up was refused: undo the optimistic turn, keep the text.
          turns.pop();
          ["a", "b"].forEach(function (s) { panes[s].removeChild(panes[s].lastChild); });
          box.value = pendingText;
          pendingText = null;
          setState(turns.length ? "ready" : "idle");
          if (pendingImages) {
            // A refused start keeps its images attached, to send again or remove.
            attached = pendingImages;
            attached.forEach(function (item) { attachList.appendChild(item.li); });
            pendingImages = null;
            showImages([]);
            renderAttached();
          }
        }
        break;
      default:
        break;
    }
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    ws = new WebSocket(scheme + location.host + root.dataset.wsPath);
    ws.onopen = function () {
      retry = 0;
      root.dataset.connected = "true";
      if (!dropped) return;
      dropped = false;
      // Back, perhaps on another web process: a vote whose reply was lost is sent again (the
      // server answers a repeat with the reveal); a battle under way is shown again.
      if (pendingVote !== null) {
        send({ action: "vote", battle: battleId, choice: pendingVote });
      } else if (battleId && (state === "generating" || state === "ready")) {
        resuming = send({ action: "resume", battle: battleId });
      }
    };
    ws.onmessage = function (e) {
      try { onFrame(JSON.parse(e.data)); } catch (err) { console.error(err); }
    };
    ws.onclose = function () {
      root.dataset.connected = "false";
      if (refused) return;
      if (state === "generating" && !battleId) {
        // Dropped before the server said the battle exists: nothing to come back to.
        setState("void");
        showNotice("The connection dropped before the battle started. Start a new battle.", "error");
      } else if (battleId && (state === "generating" || state === "ready" || pendingVote !== null)) {
        dropped = true;
        showNotice("The connection dropped. Reconnecting to carry on with this battle…", "info");
      }
      retry = Math.min(retry + 1, 4); // at most 4 s between tries
      setTimeout(connect, 250 * Math.pow(2, retry));
    };
  }

  function submit() {
    var text = box.value;
    if (blocked) return;
    if (!text.trim()) {
      showNotice("Type a prompt first: it cannot be empty.", "error", "prompt");
      return;
    }
    if (text.length > maxChars) {
      showNotice("The prompt is " + text.length + " characters; the limit is " + maxChars + ".",
        "error", "prompt");
      return;
    }
    if (state === "generating") return;
    if (attached.some(function (item) { return !item.sha256; })) {
      showNotice("Wait until the images have uploaded.", "info", "prompt");
      return;
    }
    var payload;
    var images = state === "ready" ? [] : attached;
    if (state === "ready") {
      payload = { action: "follow_up", text: text };
    } else {
      payload = { action: "start", prompt: text };
      if (drawnPrompt && drawnPrompt.text === text) payload.prompt_id = drawnPrompt.id;
      if (images.length) payload.images = images.map(function (item) { return item.sha256; });
    }
    if (!send(payload)) return;
    if (payload.action === "start") {
      clearPanes();
      battleId = null;
      offer.hidden = true;
      pendingImages = images.length ? images : null;
      attached = [];
      attachList.textContent = "";
      renderAttached();
      showImages(images.map(function (item) { return item.url; }));
    }
    dismissMessages();
    addTurn(text);
    pendingText = text;
    showNotice("", "");
    setState("generating");
    box.value = "";
    drawnPrompt = null;
    updateCounter();
  }

  function vote(choice) {
    if (state !== "ready" || pendingVote !== null) return;
    // Always naming the battle, so the vote means the same on any socket, after any drop.
    if (send({ action: "vote", battle: battleId, choice: choice })) {
      pendingVote = choice;
      voteButtons.forEach(function (b) { b.disabled = true; });
    }
  }

  function updateCounter() {
    // A prompt over the limit is refused where it is typed (never silently cut): the counter
    // says by how much, and Send stays off until it fits.
    var over = box.value.length - maxChars;
    counter.textContent = box.value.length + " / " + maxChars +
      (over > 0 ? ": " + over + " characters over the limit" : "");
    counter.classList.toggle("over", over > 0);
    sendBtn.disabled = state === "generating" || over > 0 || blocked;
  }

  function dismissMessages() {
    // The page's one-off messages ("Signed in as …") have been read once a battle starts.
    Array.prototype.forEach.call(document.querySelectorAll(".messages"), function (m) {
      m.remove();
    });
  }

  form.addEventListener("submit", function (e) { e.preventDefault(); submit(); });
  imageInput.addEventListener("change", function () {
    attachFiles(imageInput.files);
    imageInput.value = ""; // the same file may be picked again after it is removed
  });
  box.addEventListener("paste", function (e) {
    if (e.clipboardData && attachFiles(e.clipboardData.files)) e.preventDefault();
  });
  form.addEventListener("dragover", function (e) {
    if (!e.dataTransfer || Array.prototype.indexOf.call(e.dataTransfer.types, "Files") < 0) return;
    e.preventDefault();
    form.classList.add("dropping");
  });
  form.addEventListener("dragleave", function () { form.classList.remove("dropping"); });
  form.addEventListener("drop", function (e) {
    form.classList.remove("dropping");
    if (e.dataTransfer && e.dataTransfer.files.length) {
      e.preventDefault();
      attachFiles(e.dataTransfer.files);
    }
  });
  box.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); }
  });
  box.addEventListener("input", function () {
    if (noticeCause === "prompt") showNotice("", "");
    updateCounter();
  });
  stopBtn.addEventListener("click", function () {
    if (state !== "generating" || !battleId) return;
    stopBtn.disabled = send({ action: "stop", battle: battleId });
  });
  voteButtons.forEach(function (b) {
    b.addEventListener("click", function () { vote(b.dataset.choice); });
  });
  document.addEventListener("keydown", function (e) {
    if (e.target === box || e.ctrlKey || e.metaKey || e.altKey) return;
    var choice = { "1": "a", "2": "b", "3": "tie", "4": "both_bad" }[e.key];
    if (choice) { e.preventDefault(); vote(choice); }
  });
  document.getElementById("carry-on").addEventListener("click", function () {
    battleId = root.dataset.inProgress;
    offer.hidden = true;
    resuming = send({ action: "resume", battle: battleId });
  });
  document.getElementById("new-battle").addEventListener("click", function () {
    offer.hidden = true;
    if (state === "generating") return;
    clearPanes();
    battleId = null;
    delete root.dataset.battle;
    showNotice("", "");
    setState("idle");
    box.focus();
  });
  randomBtn.addEventListener("click", function () {
    fetch(root.dataset.randomUrl, { credentials: "same-origin" })
      .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
      .then(function (res) {
        if (!res.ok) { showNotice(res.body.error || "No prompt available.", "error"); return; }
        drawnPrompt = { id: res.body.id, text: res.body.text };
        box.value = res.body.text;
        updateCounter();
        box.focus();
      })
      .catch(function () { showNotice("Could not draw a prompt. Please try again.", "error"); });
  });

  setState("idle");
  updateCounter();
  if (root.dataset.inProgress) offer.hidden = false;
  connect();
})();
