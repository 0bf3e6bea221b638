// Swagger UI bootstrap for /docs. This lives in its own file so the page
// works under a Content-Security-Policy of script-src 'self'.
(function () {
  'use strict';

  window.ui = window.SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    persistAuthorization: true,
    tryItOutEnabled: false,
    // Don't call the public validator at validator.swagger.io (the badge).
    validatorUrl: null,
    // Ignore ?url= / ?configUrl= in the page URL, so the page can't be
    // pointed at a remote spec. (This is already the default; set it anyway.)
    queryConfigEnabled: false,
    // The "apis" preset already includes the base plugins (DownloadUrl etc.).
    // BaseLayout needs no swagger-ui-standalone-preset.js.
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout'
  });
})();
