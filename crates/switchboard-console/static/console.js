// Switchboard console: the few live parts of the pages, written for this project (no
// framework, nothing fetched from elsewhere). Every page works without it; with it:
//  - a section with data-live-source follows that URL's server-sent events and shows the
//    HTML each "queue" event carries (rendered and escaped by the server);
//  - countdowns (data-deadline) and waiting times (data-since) tick every second;
//  - forms marked data-live are sent with fetch, carrying the session's CSRF token in the
//    x-csrf-token header, so the page stays where it is and the live section updates;
//  - the audit page's "Verify chain" follows the walk's progress (data-verify-live) and
//    shows the verdict in place.
"use strict";

(function () {
  var csrfMeta = document.querySelector('meta[name="csrf-token"]');
  var csrf = csrfMeta ? csrfMeta.getAttribute("content") : "";

  function span(ms) {
    if (ms < 0) ms = 0;
    if (ms < 1000) return Math.floor(ms) + " ms";
    if (ms < 60000) return Math.floor(ms / 1000) + " s";
    if (ms < 3600000) {
      var minutes = Math.floor(ms / 60000);
      var seconds = Math.floor((ms % 60000) / 1000);
      return minutes + " min " + (seconds < 10 ? "0" : "") + seconds + " s";
    }
    if (ms < 86400000) return Math.floor(ms / 3600000) + " h";
    return Math.floor(ms / 86400000) + " d";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-deadline]").forEach(function (el) {
      var left = Number(el.getAttribute("data-deadline")) - now;
      el.textContent = left > 0 ? span(left) : "now";
      el.classList.toggle("soon", left < 10000);
    });
    document.querySelectorAll("[data-since]").forEach(function (el) {
      el.textContent = span(now - Number(el.getAttribute("data-since")));
    });
  }

  function say(text, kind) {
    var status = document.getElementById("console-status");
    if (!status) {
      status = document.createElement("p");
      status.id = "console-status";
      status.setAttribute("role", "status");
      var main = document.getElementById("main");
      if (main) main.insertBefore(status, main.firstChild);
    }
    status.className = kind || "";
    status.textContent = text;
  }

  function follow(section) {
    var url = section.getAttribute("data-live-source");
    if (!url || typeof EventSource === "undefined") return;
    var source = new EventSource(url);
    source.addEventListener("queue", function (event) {
      section.innerHTML = event.data;
      section.setAttribute("data-updated", String(Date.now()));
      tick();
    });
    source.addEventListener("open", function () {
      section.classList.remove("stale");
    });
    source.addEventListener("error", function () {
      // The browser reconnects by itself; say the list may be old meanwhile.
      section.classList.add("stale");
    });
  }

  function send(form) {
    var body = new URLSearchParams(new FormData(form));
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    fetch(form.getAttribute("action"), {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "x-csrf-token": csrf },
    })
      .then(function (response) {
        // A redirect followed (to the sign-in page) is not the answer asked for.
        if (response.ok && !response.redirected) {
          say("Done.", "ok");
          var card = form.closest("article.approval");
          if (card) card.classList.add("answered");
          return;
        }
        return response.text().then(function (text) {
          var page = new DOMParser().parseFromString(text, "text/html");
          var problem = page.querySelector(".problem");
          say(problem ? problem.textContent : "The gateway answered " + response.status, "problem");
        });
      })
      .catch(function (error) {
        say("The gateway could not be reached: " + error, "problem");
      })
      .finally(function () {
        buttons.forEach(function (b) { b.disabled = false; });
      });
  }

  function verify(form) {
    var box = document.getElementById("verify-progress");
    if (!box || typeof EventSource === "undefined") return false;
    var bar = box.querySelector("progress");
    var count = box.querySelector(".count");
    var button = form.querySelector("button");
    box.hidden = false;
    if (button) button.disabled = true;
    var source = new EventSource(form.getAttribute("data-verify-live"));
    source.addEventListener("progress", function (event) {
      var at = JSON.parse(event.data);
      bar.max = Math.max(at.total, 1);
      bar.value = at.rows;
      count.textContent = at.rows + " of " + at.total + " rows";
    });
    source.addEventListener("done", function (event) {
      source.close();
      box.innerHTML = event.data;
      if (button) button.disabled = false;
    });
    source.addEventListener("error", function () {
      source.close();
      say("The verification's progress was lost; the button still verifies.", "problem");
      if (button) button.disabled = false;
    });
    return true;
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    if (form.hasAttribute("data-verify-live")) {
      if (verify(form)) event.preventDefault();
      return;
    }
    if (!form.hasAttribute("data-live")) return;
    event.preventDefault();
    send(form);
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-live-source]").forEach(follow);
    tick();
    setInterval(tick, 1000);
  });
})();
