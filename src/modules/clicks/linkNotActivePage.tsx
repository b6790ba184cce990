/** The pages a tracking link shows a visitor instead of redirecting. */
import { PublicPage } from '../../web/views/PublicPage.js';

export function LinkNotActivePage() {
  return (
    <PublicPage title="Link not active">
      <h1>This link is not active</h1>
      <p>The offer behind this link is paused or no longer available.</p>
    </PublicPage>
  );
}

/** The click could not be recorded (storage unavailable, a failure on our side): try again. */
export function LinkUnavailablePage({ retry }: { retry: boolean }) {
  return (
    <PublicPage title="Link temporarily unavailable">
      <h1>This link is temporarily unavailable</h1>
      <p>{retry ? 'Please try again in a moment.' : 'Please try again later.'}</p>
    </PublicPage>
  );
}
