// Starts Swagger UI on the page's placeholder. It is a file of its own, not
// an inline script, so that the page's Content-Security-Policy can allow
// scripts from the page's origin only.
//
// Reference only: "Try it out" is off (no submit methods), so the page never
// asks for a token or sends requests to the API; the validator badge (an
// outside service) and configuration from the query string are off too.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = window.SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    domNode: root,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
    displayOperationId: true,
    filter: true,
    supportedSubmitMethods: [],
    validatorUrl: null,
    queryConfigEnabled: false
  });
})();
