// diffgenome HTML report: filters and search on the index, expand/collapse on test pages.
// Vanilla JavaScript, no requests. The filter state lives in the URL fragment
// (#status=changed,added&only=unverified&q=text), so a filtered view can be bookmarked or linked.
(function () {
  "use strict";

  function all(selector, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(selector));
  }

  function readHash() {
    var state = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      if (!part) {
        return;
      }
      var cut = part.indexOf("=");
      var key = cut < 0 ? part : part.slice(0, cut);
      var value = cut < 0 ? "" : part.slice(cut + 1);
      try {
        state[key] = decodeURIComponent(value.replace(/\+/g, " "));
      } catch (e) {
        state[key] = value;
      }
    });
    return state;
  }

  function setupIndex() {
    var table = document.getElementById("tests");
    var form = document.getElementById("filters");
    if (!table || !form) {
      return;
    }
    var rows = all("tbody tr", table);
    var boxes = all("input[data-status]", form);
    var onlys = all("input[data-only]", form);
    var search = document.getElementById("search");
    var shown = document.getElementById("shown");
    var texts = rows.map(function (row) {
      return row.textContent.toLowerCase();
    });

    function apply() {
      var wanted = {};
      boxes.forEach(function (box) {
        wanted[box.getAttribute("data-status")] = box.checked;
      });
      var flags = onlys
        .filter(function (box) {
          return box.checked;
        })
        .map(function (box) {
          return "data-" + box.getAttribute("data-only");
        });
      var query = search.value.trim().toLowerCase();
      var visible = 0;
      rows.forEach(function (row, i) {
        var status = row.getAttribute("data-status");
        var ok =
          wanted[status] !== false &&
          (!query || texts[i].indexOf(query) >= 0) &&
          flags.every(function (flag) {
            return row.hasAttribute(flag);
          });
        row.hidden = !ok;
        if (ok) {
          visible += 1;
        }
      });
      shown.textContent = visible + " of " + rows.length + " tests shown";
      document.body.setAttribute("data-shown", String(visible));
    }

    function fromHash() {
      var state = readHash();
      if (typeof state.status === "string") {
        var on = {};
        state.status.split(",").forEach(function (status) {
          on[status] = true;
        });
        boxes.forEach(function (box) {
          box.checked = !!on[box.getAttribute("data-status")];
        });
      }
      if (typeof state.only === "string") {
        var only = {};
        state.only.split(",").forEach(function (flag) {
          only[flag] = true;
        });
        onlys.forEach(function (box) {
          box.checked = !!only[box.getAttribute("data-only")];
        });
      }
      if (typeof state.q === "string") {
        search.value = state.q;
      }
      apply();
    }

    function toHash() {
      var on = boxes
        .filter(function (box) {
          return box.checked;
        })
        .map(function (box) {
          return box.getAttribute("data-status");
        });
      var hash = "#status=" + on.join(",");
      var only = onlys
        .filter(function (box) {
          return box.checked;
        })
        .map(function (box) {
          return box.getAttribute("data-only");
        });
      if (only.length) {
        hash += "&only=" + only.join(",");
      }
      if (search.value) {
        hash += "&q=" + encodeURIComponent(search.value);
      }
      if (hash !== location.hash && window.history && history.replaceState) {
        try {
          history.replaceState(null, "", hash);
        } catch (e) {
          // Some browsers refuse to change the URL of a file:// page; the view still works.
        }
      }
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
    });
    boxes.concat(onlys).forEach(function (box) {
      box.addEventListener("change", function () {
        apply();
        toHash();
      });
    });
    search.addEventListener("input", function () {
      apply();
      toHash();
    });
    window.addEventListener("hashchange", fromHash);
    fromHash();
  }

  function setupTrees() {
    all("button[data-expand]").forEach(function (button) {
      button.addEventListener("click", function () {
        var open = button.getAttribute("data-expand") === "open";
        all("#trees details").forEach(function (details) {
          details.open = open;
        });
      });
    });
    var panels = all("#trees .side");
    if (panels.length !== 2) {
      return;
    }
    // The same node has the same data-key in both trees: opening or closing it on one side
    // does the same on the other, so that the trees stay open at the same nodes.
    panels.forEach(function (panel, i) {
      var other = panels[1 - i];
      all("details[data-key]", panel).forEach(function (details) {
        details.addEventListener("toggle", function () {
          var twin = other.querySelector(
            'details[data-key="' + details.getAttribute("data-key") + '"]'
          );
          if (twin && twin.open !== details.open) {
            twin.open = details.open;
          }
        });
      });
    });
    // Scrolling one tree scrolls the other to the same node: the first node shown at the top
    // of the scrolled panel is put at the top of the other (where the other has it), else the
    // other is scrolled by the same share of its height.
    var syncing = null;
    function firstShown(panel) {
      var top = panel.getBoundingClientRect().top;
      var nodes = all("span[data-key]", panel);
      for (var i = 0; i < nodes.length; i += 1) {
        var box = nodes[i].getBoundingClientRect();
        if (box.height > 0 && box.bottom > top) {
          return nodes[i];
        }
      }
      return null;
    }
    panels.forEach(function (panel, i) {
      var other = panels[1 - i];
      panel.addEventListener("scroll", function () {
        if (syncing === other) {
          syncing = null;
          return;
        }
        var anchor = firstShown(panel);
        var twin =
          anchor &&
          other.querySelector('span[data-key="' + anchor.getAttribute("data-key") + '"]');
        var target;
        if (twin && twin.getBoundingClientRect().height > 0) {
          var offset = anchor.getBoundingClientRect().top - panel.getBoundingClientRect().top;
          target =
            other.scrollTop +
            (twin.getBoundingClientRect().top - other.getBoundingClientRect().top) -
            offset;
        } else {
          var share = panel.scrollTop / Math.max(1, panel.scrollHeight - panel.clientHeight);
          target = share * (other.scrollHeight - other.clientHeight);
        }
        target = Math.round(target);
        if (Math.abs(other.scrollTop - target) >= 1 || other.scrollLeft !== panel.scrollLeft) {
          syncing = panel;
          other.scrollTop = target;
          other.scrollLeft = panel.scrollLeft;
        }
      });
    });
  }

  setupIndex();
  setupTrees();
})();
