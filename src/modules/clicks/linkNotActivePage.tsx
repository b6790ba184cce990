/** The page of a tracking link whose offer or partner is not active. */
import { PublicPage } from '../../web/views/PublicPage.js';

export function LinkNotActivePage() {
  return (
    <PublicPage title="Link not active">
      <h1>This link is not active</h1>
      <p>The offer behind this link is paused or no longer available.</p>
    </PublicPage>
  );
}
